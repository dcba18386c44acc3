"""Bad input, one test per case: a clear message naming the problem (or a finding with its documented code),
no traceback, and nothing changed (the whole tree, bytes and metadata, before == after).

The modules run in a child process as under Ansible (module_child.py). docs/RELIABILITY.md lists every
case; test_docs_list_every_case keeps the two in step. Each run's outcome and message go to
build/reliability/catalogue/<case>.json.
"""

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections import namedtuple

import pytest

from reliability_tools import ROOT, clone, repair_args, run_child, state_differences

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import swap_dir_of
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import (
    GCC, build_so, dynamic_offset, synthetic_elf)
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist

OUT_DIR = os.path.join(ROOT, "build", "reliability", "catalogue")
FACTS, REPAIR = "cuda_venv_facts", "cuda_venv_repair"

# expect: ("fail", substrings of msg) or ("finding", code, subject, message): the finding's exact subject and message,
# with {venv}, {site} (its site-packages) and {tmp} (the case's folder) filled in
Case = namedtuple("Case", "id module build args expect")


class Ctx:
    """What a case builds on: a small real venv (no pip) with a tiny importable torch, or a stand-in clone."""

    def __init__(self, tmp_path, bank):
        self.tmp = tmp_path
        self.bank = bank
        self.venv = None
        self.site = None
        self.sealed = []  # paths made unreadable after the "before" state is read, opened again before "after"

    def small(self):
        path = self.tmp / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
        self.venv = path
        self.site = next(path.glob("lib/python3*/site-packages"))
        make_dist(str(self.site), "torch", "2.9.1", files={"torch/__init__.py": b"__version__ = '2.9.1'\n"})
        return path

    def standin(self, name):
        info = clone(self.bank(name), self.tmp / name)
        self.venv = info.venv
        self.site = next(info.venv.glob("lib/python3*/site-packages"))
        self.info = info
        return info.venv

    def dist(self, name, version="1.0", **kwargs):
        return make_dist(str(self.site), name, version, **kwargs)

    def so(self, **kwargs):
        path = str(self.tmp / "build.so")
        build_so(path, **kwargs)
        with open(path, "rb") as handle:
            return handle.read()

    def consumer(self, needed, folder):
        """A distribution 'cons' whose libcons.so needs ``needed`` through RUNPATH $ORIGIN/../FOLDER."""
        self.dist("cons", files={"cons/__init__.py": b"", "cons/libcons.so": self.so(needed=(needed,), runpath="$ORIGIN/../" + folder)})


def _outside(ctx):
    path = ctx.tmp / "outside"
    path.mkdir(exist_ok=True)
    (path / "victim.txt").write_bytes(b"precious\n")
    return path


# --- builders: each returns the path to pass as the module's ``path`` ------------------------------------------

def b_small(ctx):
    return ctx.small()


def b_trunc(ctx):
    return ctx.standin("truncated-nccl")


def b_absent(ctx):
    return ctx.tmp / "absent"


def b_file(ctx):
    path = ctx.tmp / "file"
    path.write_text("not a venv\n")
    return path


def b_plain_dir(ctx):
    path = ctx.tmp / "plain"
    path.mkdir()
    return path


def b_cfg_not_utf8(ctx):
    path = ctx.small()
    (path / "pyvenv.cfg").write_bytes(b"home = /usr/bin\nversion = 3.12\nprompt = caf\xe9\n")
    return path


def b_cfg_huge(ctx):
    path = ctx.small()
    (path / "pyvenv.cfg").write_bytes(b"home = /usr/bin\n" + b"# padding\n" * 8000)
    return path


def b_cfg_dir(ctx):
    path = ctx.small()
    (path / "pyvenv.cfg").unlink()
    (path / "pyvenv.cfg").mkdir()
    return path


def b_python_missing(ctx):
    path = ctx.small()
    (path / "bin" / "python").unlink()
    return path


def b_python_fails(ctx):
    path = ctx.small()
    python = path / "bin" / "python"
    python.unlink()
    python.write_text("#!/bin/sh\nexit 3\n")
    python.chmod(0o755)
    return path


def b_site_unreadable(ctx):
    path = ctx.small()
    ctx.sealed.append(ctx.site)
    return path


def b_no_record(ctx):
    path = ctx.small()
    os.unlink(os.path.join(ctx.dist("norecord", files={"norecord.py": b"x = 1\n"}), "RECORD"))
    return path


def b_no_metadata(ctx):
    path = ctx.small()
    os.unlink(os.path.join(ctx.dist("nometa", files={"nometa.py": b"x = 1\n"}), "METADATA"))
    return path


def b_record_bad_csv(ctx):
    path = ctx.small()
    ctx.dist("badcsv", files={"badcsv.py": b"x = 1\n"}, record=b'badcsv.py,"sha256=abc\n')
    return path


def b_record_bad_hash(ctx):
    path = ctx.small()
    ctx.dist("badhash", files={"badhash.py": b"x = 1\n"}, record=b"badhash.py,sha256=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,6\n")
    return path


def b_record_bad_hash_field(ctx):
    path = ctx.small()
    ctx.dist("badfield", files={"badfield.py": b"x = 1\n"}, record=b"badfield.py,md5,6\n")
    return path


def b_record_unknown_algorithm(ctx):
    path = ctx.small()
    ctx.dist("oddalg", files={"oddalg.py": b"x = 1\n"}, record=b"oddalg.py,whirlpool9=abcd,6\n")
    return path


def b_record_bad_size(ctx):
    path = ctx.small()
    ctx.dist("badsize", files={"badsize.py": b"x = 1\n"}, record=b"badsize.py,,6x\n")
    return path


def b_record_not_utf8(ctx):
    path = ctx.small()
    ctx.dist("latin", files={"latin.py": b"x = 1\n"}, record=b"latin.py,,6\nr\xe9sum\xe9.py,,3\n")
    return path


def b_record_four_fields(ctx):
    path = ctx.small()
    ctx.dist("wide", files={"wide.py": b"x = 1\n"}, record=b"wide.py,,6,extra\n")
    return path


def b_record_nul(ctx):
    path = ctx.small()
    ctx.dist("nul", files={"nul.py": b"x = 1\n"}, record=b"nul.py,,6\nnul\x00.py,,3\n")
    return path


def b_elf_offset_overflow(ctx):
    path = ctx.small()
    data = bytearray(synthetic_elf(soname="libhuge.so.1"))
    data[32:40] = (1 << 63).to_bytes(8, "little")  # e_phoff beyond any file
    ctx.dist("huge", files={"huge/libhuge.so.1": bytes(data)})
    return path


def b_duplicate(ctx):
    path = ctx.small()
    ctx.dist("torch", "2.8.0", files={"torch/version.py": b"v = '2.8.0'\n"})
    return path


def b_metadata_not_utf8(ctx):
    path = ctx.small()
    ctx.dist("latin", metadata=b"Metadata-Version: 2.1\nName: latin\nVersion: 1.0\nSummary: caf\xe9\n")
    return path


def b_metadata_huge(ctx):
    path = ctx.small()
    ctx.dist("huge", metadata=b"Metadata-Version: 2.1\nName: huge\nVersion: 1.0\n\n" + b"x" * (2 * 1024 * 1024))
    return path


def b_egg_info_no_files(ctx):
    path = ctx.small()
    egg = ctx.site / "old-1.0-py3.12.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: old\nVersion: 1.0\n")
    return path


def b_elf_truncated_header(ctx):
    path = ctx.small()
    ctx.dist("trunc", files={"trunc/libtrunc.so.1": synthetic_elf(soname="libtrunc.so.1")[:40]})
    return path


def b_elf_truncated_dynamic(ctx):
    path = ctx.small()
    data = ctx.so(soname="libdyn.so.1", needed=("libm.so.6",))
    offset = dynamic_offset(str(ctx.tmp / "build.so"))
    ctx.dist("dyn", files={"dyn/libdyn.so.1": data[:offset + 8]})
    return path


def b_elf_other_machine(ctx):
    path = ctx.small()
    ctx.consumer("libarm.so.1", "arm")
    ctx.dist("arm", files={"arm/libarm.so.1": synthetic_elf(machine=183, soname="libarm.so.1")})
    return path


def b_elf_other_class(ctx):
    path = ctx.small()
    ctx.consumer("libm32.so.1", "m32")
    ctx.dist("m32", files={"m32/libm32.so.1": synthetic_elf(elf_class=32, machine=3, soname="libm32.so.1")})
    return path


def b_elf_big_endian(ctx):
    path = ctx.small()
    ctx.consumer("libbig.so.1", "big")
    ctx.dist("big", files={"big/libbig.so.1": synthetic_elf(little_endian=False, machine=62, soname="libbig.so.1")})
    return path


def b_not_elf(ctx):
    path = ctx.small()
    ctx.dist("text", files={"text/libtext.so.1": b"INPUT(-lfoo)\n" * 8})
    return path


def b_empty_so(ctx):
    path = ctx.small()
    ctx.dist("empty", files={"empty/libempty.so.1": b""})
    return path


def b_symlink_loop_needed(ctx):
    path = ctx.small()
    ctx.consumer("libloop.so.1", "loop")
    ctx.dist("loop", files={"loop/__init__.py": b""})
    os.symlink("libloop.so.1", str(ctx.site / "loop" / "libloop.so.1"))
    return path


def b_fifo_so(ctx):
    path = ctx.small()
    folder = ctx.dist("fifo", files={"fifo/__init__.py": b""})
    os.mkfifo(str(ctx.site / "fifo" / "libfifo.so.1"))
    with open(os.path.join(folder, "RECORD"), "a") as handle:
        handle.write("fifo/libfifo.so.1,,0\n")
    return path


def b_symlink_dir_loop(ctx):
    path = ctx.small()
    (ctx.site / "pkg").mkdir()
    os.symlink("..", str(ctx.site / "pkg" / "up"))
    ctx.dist("walker", record=b"pkg/up/up/up/up/pkg/x.so,,\n")
    return path


def b_egg_info_loop(ctx):
    path = ctx.small()
    os.symlink("loop-1.0.egg-info", str(ctx.site / "loop-1.0.egg-info"))
    return path


def b_site_outside(ctx):
    path = ctx.small()
    outside = ctx.tmp / "outside-site"
    shutil.move(str(ctx.site), str(outside))
    os.symlink(str(outside), str(ctx.site))
    return path


def b_record_dotdot(ctx):
    path = ctx.small()
    outside = _outside(ctx)
    ctx.dist("escape", record=("%s,,\n" % os.path.relpath(str(outside / "victim.txt"), str(ctx.site))).encode())
    return path


def b_record_absolute(ctx):
    path = ctx.small()
    ctx.dist("absolute", record=("%s,,\n" % (_outside(ctx) / "victim.txt")).encode())
    return path


def b_record_through_symlink(ctx):
    path = ctx.small()
    os.symlink(str(_outside(ctx)), str(ctx.site / "link"))
    ctx.dist("through", record=b"link/victim.txt,,\n")
    return path


def b_journal_garbage(ctx):
    path = ctx.small()
    (path / ".cuda_venv").mkdir(mode=0o700)
    (path / ".cuda_venv" / "journal.jsonl").write_bytes(b"not json\n")
    return path


def b_state_dir_file(ctx):
    path = ctx.small()
    (path / ".cuda_venv").write_text("not a directory\n")
    return path


def b_snapshot_manifest_garbage(ctx):
    path = ctx.small()
    snap = path / ".cuda_venv" / "snapshots" / "r1-batch1"
    snap.mkdir(parents=True)
    (snap / "manifest.json").write_text("{broken")
    records = [{"run": "r1", "batch": 1, "phase": "begin", "snapshot": "r1-batch1"}, {"run": "r1", "batch": 1, "phase": "apply"}]
    (path / ".cuda_venv" / "journal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def b_snapshot_missing(ctx):
    path = ctx.small()
    (path / ".cuda_venv").mkdir(mode=0o700)
    records = [{"run": "r1", "batch": 1, "phase": "begin", "snapshot": "r1-batch1"}, {"run": "r1", "batch": 1, "phase": "action"}]
    (path / ".cuda_venv" / "journal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def args_trunc(**extra):
    """Repair args for the truncated-nccl clone (filled in at run time)."""
    return dict(extra, _standin=True)


CASES = [
    # --- options ---
    Case("backend-unknown", REPAIR, b_small, dict(backend="conda"), ("fail", ["backend", "conda", "auto, pip, uv"])),
    Case("batch-size-negative", REPAIR, b_small, dict(batch_size=-1), ("fail", ["batch_size must be >= 1, got -1"])),
    Case("batch-zero", REPAIR, b_small, dict(batch=0), ("fail", ["batch must be >= 1, got 0"])),
    Case("prune-unknown", REPAIR, b_small, dict(prune="everything"), ("fail", ["prune", "everything"])),
    Case("verify-unknown", FACTS, b_small, dict(verify="md5"), ("fail", ["verify", "md5"])),
    Case("requirement-unparsable", REPAIR, b_small, dict(packages=["torch==="]), ("fail", ["invalid requirement 'torch==='"])),
    Case("requirement-shell-marker", REPAIR, b_small, dict(packages=["torch; $(touch /tmp/cuda-venv-pwned)"]),
         ("fail", ["invalid requirement 'torch; $(touch /tmp/cuda-venv-pwned)'"])),
    Case("requirement-shell-and", REPAIR, b_small, dict(packages=["torch && touch /tmp/cuda-venv-pwned"]),
         ("fail", ["invalid requirement 'torch && touch /tmp/cuda-venv-pwned'"])),
    Case("remove-shell-metachar", REPAIR, b_small, dict(remove=["sglang; rm -rf /"]),
         ("fail", ["invalid distribution name 'sglang; rm -rf /'"])),
    Case("remove-command-substitution", REPAIR, b_small, dict(remove=["$(touch /tmp/cuda-venv-pwned)"]),
         ("fail", ["invalid distribution name '$(touch /tmp/cuda-venv-pwned)'"])),
    Case("remove-path", REPAIR, b_small, dict(remove=["../../etc"]), ("fail", ["invalid distribution name '../../etc'"])),
    Case("anchor-backticks", REPAIR, b_small, dict(anchor="torch`id`"), ("fail", ["invalid distribution name 'torch`id`'"])),
    Case("remove-declared", REPAIR, b_trunc, args_trunc(remove=["nvidia-cublas-cu12"]),
         ("fail", ["cannot remove nvidia-cublas-cu12: torch requires it"])),
    Case("probe-timeout-negative", FACTS, b_small, dict(probe_timeout=-1), ("fail", ["probe_timeout must be positive, got -1"])),
    Case("installer-timeout-zero", REPAIR, b_small, dict(installer_timeout=0), ("fail", ["installer_timeout must be positive, got 0"])),
    Case("lock-timeout-negative", REPAIR, b_small, dict(lock_timeout=-5), ("fail", ["lock_timeout must be >= 0, got -5"])),
    Case("no-index-with-index-url", REPAIR, b_small, dict(no_index=True, index_url="http://127.0.0.1:9/simple"),
         ("fail", ["no_index together with index_url"])),
    Case("uv-executable-missing", REPAIR, b_trunc, args_trunc(backend="uv", uv_executable="/nonexistent/uv"),
         ("fail", ["uv executable /nonexistent/uv does not exist or is not executable"])),
    Case("find-links-relative", REPAIR, b_trunc, args_trunc(find_links=["relative/wheels"]),
         ("fail", ["batch 1: reinstall failed", "relative/wheels", "is ignored"])),
    Case("ld-library-path-relative", FACTS, b_small, dict(ld_library_path=["relative/lib"]),
         ("fail", ["relative/lib", "absolute"])),
    Case("ld-library-path-relative-repair", REPAIR, b_trunc, args_trunc(ld_library_path=["relative/lib"]),
         ("fail", ["relative/lib", "absolute"])),
    Case("path-relative", FACTS, None, dict(path="relative/venv"), ("fail", ["path must be absolute: relative/venv"])),
    Case("path-absent", FACTS, b_absent, {}, ("fail", ["does not exist"])),
    Case("path-is-file", REPAIR, b_file, {}, ("fail", ["is not a directory"])),
    # --- venvs ---
    Case("no-pyvenv-cfg", FACTS, b_plain_dir, {}, ("fail", ["is not a venv: no pyvenv.cfg"])),
    Case("pyvenv-cfg-not-utf8", FACTS, b_cfg_not_utf8, {}, ("fail", ["pyvenv.cfg is not UTF-8"])),
    Case("pyvenv-cfg-huge", FACTS, b_cfg_huge, {}, ("fail", ["pyvenv.cfg is larger than 64 KiB"])),
    Case("pyvenv-cfg-directory", REPAIR, b_cfg_dir, {}, ("fail", ["cannot read pyvenv.cfg: Is a directory"])),
    Case("interpreter-missing", FACTS, b_python_missing, {},
         ("finding", "PYTHON_UNUSABLE", "{venv}/bin/python",
          "The venv's interpreter cannot run (venv interpreter {venv}/bin/python is missing); nothing can be "
          "imported from this venv.")),
    Case("interpreter-fails", FACTS, b_python_fails, {},
         ("finding", "PYTHON_UNUSABLE", "{venv}/bin/python",
          "The venv's interpreter cannot run (venv interpreter {venv}/bin/python exited with code 3); nothing "
          "can be imported from this venv.")),
    Case("interpreter-missing-repair", REPAIR, b_python_missing, {},
         ("finding", "PYTHON_UNUSABLE", "{venv}/bin/python",
          "The venv's interpreter cannot run (venv interpreter {venv}/bin/python is missing); nothing can be "
          "imported from this venv.")),
    Case("site-packages-unreadable", FACTS, b_site_unreadable, {}, ("fail", ["cannot list", "site-packages", "Permission denied"])),
    Case("dist-info-without-record", FACTS, b_no_record, {},
         ("finding", "DIST_INFO_INVALID", "norecord 1.0",
          "norecord-1.0.dist-info: RECORD is missing.")),
    Case("dist-info-without-metadata", FACTS, b_no_metadata, {},
         ("finding", "DIST_INFO_INVALID", "nometa 1.0",
          "nometa-1.0.dist-info: METADATA is missing.")),
    Case("record-bad-csv", FACTS, b_record_bad_csv, {},
         ("finding", "DIST_INFO_INVALID", "badcsv 1.0",
          "badcsv-1.0.dist-info: RECORD line 1: bad CSV: unexpected end of data.")),
    Case("record-bad-hash", FACTS, b_record_bad_hash, dict(verify="hash"),
         ("finding", "RECORD_MODIFIED_FILES", "badhash 1.0",
          "badhash 1.0: 1 file(s) differ from RECORD (sha256): 1 path(s), e.g. badhash.py. No other wheel "
          "wrote them and badhash is outside the CUDA stack: if they are your own edits, cuda_venv_repair "
          "leaves them as they are.")),
    Case("record-malformed-hash", FACTS, b_record_bad_hash_field, {},
         ("finding", "DIST_INFO_INVALID", "badfield 1.0",
          "badfield-1.0.dist-info: RECORD line 1: bad hash 'md5'.")),
    Case("record-unknown-hash-algorithm", FACTS, b_record_unknown_algorithm, dict(verify="hash"),
         ("finding", "DIST_INFO_INVALID", "oddalg 1.0",
          "oddalg-1.0.dist-info: RECORD line 1: unknown hash algorithm 'whirlpool9': file not verified by hash.")),
    Case("record-bad-size", FACTS, b_record_bad_size, {},
         ("finding", "DIST_INFO_INVALID", "badsize 1.0",
          "badsize-1.0.dist-info: RECORD line 1: bad size '6x'.")),
    Case("record-not-utf8", FACTS, b_record_not_utf8, {},
         ("finding", "DIST_INFO_INVALID", "latin 1.0",
          "latin-1.0.dist-info: RECORD is not UTF-8.")),
    Case("record-four-fields", FACTS, b_record_four_fields, {},
         ("finding", "DIST_INFO_INVALID", "wide 1.0",
          "wide-1.0.dist-info: RECORD line 1: 4 fields, expected 3.")),
    Case("record-nul-byte", FACTS, b_record_nul, {},
         ("finding", "DIST_INFO_INVALID", "nul 1.0",
          "nul-1.0.dist-info: RECORD line 2: path contains a NUL byte: 'nul\\x00.py' (ignored).")),
    Case("duplicate-dist-info", FACTS, b_duplicate, {},
         ("finding", "DUPLICATE_DISTRIBUTION", "torch",
          "2 dist-info folders exist for torch: torch-2.8.0.dist-info, torch-2.9.1.dist-info; pip sees only "
          "one of them.")),
    Case("metadata-not-utf8", FACTS, b_metadata_not_utf8, {},
         ("finding", "DIST_INFO_INVALID", "latin 1.0",
          "latin-1.0.dist-info: METADATA is not UTF-8.")),
    Case("metadata-huge", FACTS, b_metadata_huge, {},
         ("finding", "DIST_INFO_INVALID", "huge 1.0",
          "huge-1.0.dist-info: METADATA larger than 1 MiB: read the first 1 MiB.")),
    Case("egg-info-without-file-list", FACTS, b_egg_info_no_files, {},
         ("finding", "DIST_INFO_INVALID", "old 1.0",
          "old-1.0-py3.12.egg-info: egg-info: no RECORD; installed-files.txt is missing.")),
    Case("elf-truncated-header", FACTS, b_elf_truncated_header, {},
         ("finding", "ELF_INVALID", "trunc/libtrunc.so.1",
          "trunc/libtrunc.so.1 (trunc 1.0) is not a loadable shared object: {site}/trunc/libtrunc.so.1: file "
          "too short.")),
    Case("elf-truncated-dynamic", FACTS, b_elf_truncated_dynamic, {},
         ("finding", "ELF_INVALID", "dyn/libdyn.so.1",
          "dyn/libdyn.so.1 (dyn 1.0) is not a loadable shared object: {site}/dyn/libdyn.so.1: truncated "
          "dynamic section.")),
    Case("elf-other-machine", FACTS, b_elf_other_machine, dict(anchor="cons"),
         ("finding", "SONAME_UNRESOLVED", "libarm.so.1",
          "libarm.so.1, needed by cons/libcons.so (cons 1.0) (loaded when cons is imported), cannot be loaded: "
          "libarm.so.1: cannot open shared object file: No such file or directory. It should come from arm 1.0 "
          "(arm/libarm.so.1).")),
    Case("elf-other-class", FACTS, b_elf_other_class, dict(anchor="cons"),
         ("finding", "SONAME_UNRESOLVED", "libm32.so.1",
          "libm32.so.1, needed by cons/libcons.so (cons 1.0) (loaded when cons is imported), cannot be loaded: "
          "libm32.so.1: wrong ELF class: ELFCLASS32. It should come from m32 1.0 (m32/libm32.so.1).")),
    Case("elf-big-endian", FACTS, b_elf_big_endian, dict(anchor="cons"),
         ("finding", "SONAME_UNRESOLVED", "libbig.so.1",
          "libbig.so.1, needed by cons/libcons.so (cons 1.0) (loaded when cons is imported), cannot be loaded: "
          "{site}/cons/../big/libbig.so.1: ELF file data encoding not little-endian. It should come from big "
          "1.0 (big/libbig.so.1).")),
    Case("elf-offset-overflow", FACTS, b_elf_offset_overflow, {},
         ("finding", "ELF_INVALID", "huge/libhuge.so.1",
          "huge/libhuge.so.1 (huge 1.0) is not a loadable shared object: {site}/huge/libhuge.so.1: cannot read "
          "file data.")),
    Case("not-elf", FACTS, b_not_elf, {},
         ("finding", "ELF_INVALID", "text/libtext.so.1",
          "text/libtext.so.1 (text 1.0) is not a loadable shared object: {site}/text/libtext.so.1: invalid ELF "
          "header.")),
    Case("empty-shared-object", FACTS, b_empty_so, {},
         ("finding", "ELF_INVALID", "empty/libempty.so.1",
          "empty/libempty.so.1 (empty 1.0) is not a loadable shared object: {site}/empty/libempty.so.1: file "
          "too short.")),
    Case("symlink-loop-needed", FACTS, b_symlink_loop_needed, dict(anchor="cons"),
         ("finding", "SONAME_UNRESOLVED", "libloop.so.1",
          "libloop.so.1, needed by cons/libcons.so (cons 1.0) (loaded when cons is imported), cannot be "
          "loaded: libloop.so.1: cannot open shared object file: No such file or directory.")),
    Case("fifo-named-like-a-library", FACTS, b_fifo_so, dict(verify="hash"),
         ("finding", "RECORD_MODIFIED_FILES", "fifo 1.0",
          "fifo 1.0: 1 file(s) differ from RECORD (sha256): 1 shared library: libfifo.so.1. No other wheel "
          "wrote them and fifo is outside the CUDA stack: if they are your own edits, cuda_venv_repair leaves "
          "them as they are.")),
    Case("symlink-dir-loop", FACTS, b_symlink_dir_loop, {},
         ("finding", "RECORD_MISSING_FILES", "walker 1.0",
          "walker 1.0: 1 of 1 files listed in RECORD are missing (metadata-only: only its dist-info is left): "
          "1 shared library: x.so. No other wheel wrote them and walker is outside the CUDA stack: if they are "
          "your own edits, cuda_venv_repair leaves them as they are.")),
    Case("egg-info-symlink-loop", FACTS, b_egg_info_loop, {},
         ("finding", "DIST_INFO_INVALID", "loop 1.0",
          "loop-1.0.egg-info: egg-info: no RECORD; PKG-INFO is unreadable: Too many levels of symbolic links; "
          "installed-files.txt is missing.")),
    Case("site-packages-outside", FACTS, b_site_outside, {},
         ("finding", "RECORD_PATH_OUTSIDE_VENV", "torch 2.9.1",
          "torch 2.9.1 lists 4 path(s) outside the venv, which are never read, deleted or written: RECORD "
          "entry 'torch/__init__.py' leaves the venv; RECORD entry 'torch-2.9.1.dist-info/METADATA' leaves the "
          "venv; RECORD entry 'torch-2.9.1.dist-info/INSTALLER' leaves the venv.")),
    Case("site-packages-outside-repair", REPAIR, b_site_outside, dict(prune="all"),
         ("finding", "RECORD_PATH_OUTSIDE_VENV", "torch 2.9.1",
          "torch 2.9.1 lists 4 path(s) outside the venv, which are never read, deleted or written: RECORD "
          "entry 'torch/__init__.py' leaves the venv; RECORD entry 'torch-2.9.1.dist-info/METADATA' leaves the "
          "venv; RECORD entry 'torch-2.9.1.dist-info/INSTALLER' leaves the venv.")),
    Case("record-dotdot", FACTS, b_record_dotdot, {},
         ("finding", "RECORD_PATH_OUTSIDE_VENV", "escape 1.0",
          "escape 1.0 lists 1 path(s) outside the venv, which are never read, deleted or written: RECORD entry "
          "'../../../../outside/victim.txt' leaves the venv.")),
    Case("record-absolute", FACTS, b_record_absolute, {},
         ("finding", "RECORD_PATH_OUTSIDE_VENV", "absolute 1.0",
          "absolute 1.0 lists 1 path(s) outside the venv, which are never read, deleted or written: RECORD "
          "entry '{tmp}/outside/victim.txt' leaves the venv.")),
    Case("record-through-symlink", FACTS, b_record_through_symlink, {},
         ("finding", "RECORD_PATH_OUTSIDE_VENV", "through 1.0",
          "through 1.0 lists 1 path(s) outside the venv, which are never read, deleted or written: RECORD "
          "entry 'link/victim.txt' leaves the venv.")),
    # --- state left by other runs ---
    Case("journal-garbage", REPAIR, b_journal_garbage, {}, ("fail", ["journal.jsonl line 1 is not a JSON record", "move the file aside"])),
    Case("state-dir-is-a-file", REPAIR, b_state_dir_file, {}, ("fail", [".cuda_venv/lock", "cannot create the lock"])),
    Case("snapshot-manifest-garbage", REPAIR, b_snapshot_manifest_garbage, {},
         ("fail", ["rolling back interrupted run r1 (batch 1) failed", "manifest.json is unreadable"])),
    Case("snapshot-missing-mid-change", REPAIR, b_snapshot_missing, {},
         ("fail", ["left mid-change by run r1 (batch 1, last phase action)", "cannot be rolled back"])),
]

NEEDS_GCC = {"elf-truncated-dynamic", "elf-other-machine", "elf-other-class", "elf-big-endian", "symlink-loop-needed"}


def _params():
    for case in CASES:
        marks = []
        if case.id in NEEDS_GCC and GCC is None:
            marks.append(pytest.mark.skip(reason="gcc is not installed"))
        yield pytest.param(case, id=case.id, marks=marks)


def _prefix_for(case):
    """Permission cases: root reads everything, so the module runs without CAP_DAC_OVERRIDE/READ_SEARCH."""
    if case.id != "site-packages-unreadable" or os.geteuid() != 0:
        return ()
    if not shutil.which("setpriv"):
        pytest.skip("running as root and setpriv is missing: cannot make site-packages unreadable")
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--")


def _state(root):
    """Every path under ``root`` with its type, mode, owner, size, mtime, symlink target and sha256 (regular files
    only: a FIFO is never opened), in the rows format of reliability_tools."""
    rows = [_row(str(root), str(root))]
    for directory, dirs, files in os.walk(str(root)):
        for name in dirs + files:
            rows.append(_row(str(root), os.path.join(directory, name)))
    return sorted(rows)


def _row(root, path):
    st = os.lstat(path)
    rel = os.path.relpath(path, root)
    kind = "d" if stat.S_ISDIR(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else "f" if stat.S_ISREG(st.st_mode) else "o"
    digest = target = None
    if kind == "f":
        with open(path, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
    elif kind == "l":
        target = os.readlink(path)
    size = st.st_size if kind in ("f", "l") else None
    return (os.fsencode(rel).hex(), (kind, st.st_mode, st.st_uid, st.st_gid, size, st.st_mtime_ns, target, digest))


STATE_DIR = ".cuda_venv"


@pytest.mark.parametrize("case", list(_params()))
def test_bad_input(tmp_path, bank, case):
    ctx = Ctx(tmp_path, bank)
    path = case.build(ctx) if case.build else None
    args = {k: v for k, v in case.args.items() if not k.startswith("_")}
    if case.args.get("_standin"):
        base = repair_args(ctx.info)
        base.update(args)
        args = base
    args.setdefault("path", str(path))
    if case.module == FACTS:
        args.setdefault("gpu", False)
    elif "find_links" not in args and not args.get("index_url"):
        args.update(find_links=[str(tmp_path / "no-wheels")], no_index=True)
    prefix = _prefix_for(case)
    before = _state(tmp_path)
    modes = [(p, p.stat().st_mode) for p in ctx.sealed]
    for sealed, _mode in modes:
        sealed.chmod(0)
    run = run_child(tmp_path.parent / (tmp_path.name + "-run"), case.module, args, prefix=prefix)
    for sealed, mode in modes:
        sealed.chmod(mode)
    after = _state(tmp_path)
    record(case, run)

    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert run.result, "no JSON result:\n" + run.output[-3000:]
    kind = case.expect[0]
    if kind == "fail":
        assert run.rc != 0 and run.result.get("failed") is True, run.output[-2000:]
        for text in case.expect[1]:
            assert text in run.result["msg"], run.result["msg"]
    else:
        _kind, code, subject, message = case.expect
        facts = run.result.get("ansible_facts", {}).get("cuda_venv", run.result)
        places = dict(venv=str(ctx.venv), site=str(ctx.site), tmp=str(tmp_path))
        subject, message = subject.format(**places), message.format(**places)
        hits = [f for f in facts.get("findings", []) if f["code"] == code and f["subject"] == subject]
        assert hits, "no %s finding about %s: %s" % (code, subject, json.dumps(facts.get("findings"), indent=1)[:3000])
        assert [f["message"] for f in hits] == [message]
    assert unchanged_but_state_dir(before, after, tmp_path, path) == []
    assert not os.path.exists("/tmp/cuda-venv-pwned")


def unchanged_but_state_dir(before, after, tmp_path, venv):
    """Paths that changed, except what a repair adds to its own state dirs (lock, journal, snapshots; the swap
    journal beside the venv).

    Files that were in the state dir before (a journal, a manifest left by another run) must not change.
    """
    old = dict(before)
    states = []
    if venv is not None and os.path.isabs(str(venv)):
        states = [os.path.relpath(os.path.join(str(venv), STATE_DIR), str(tmp_path)),
                  os.path.relpath(swap_dir_of(str(venv)), str(tmp_path))]
    wrong = []
    for rel in state_differences(after, before):
        key = os.fsencode(rel).hex()
        in_state = any(rel == state or rel.startswith(state + "/") for state in states)
        if in_state and (key not in old or old[key][0] == "d"):
            continue
        wrong.append(rel)
    return wrong


def record(case, run):
    os.makedirs(OUT_DIR, exist_ok=True)
    facts = run.result.get("ansible_facts", {}).get("cuda_venv", run.result)
    outcome = {"case": case.id, "module": case.module, "rc": run.rc, "msg": run.result.get("msg"),
               "findings": [(f["code"], f["subject"], f["message"]) for f in facts.get("findings", [])
                            if case.expect[0] == "finding" and f["code"] == case.expect[1]]}
    with open(os.path.join(OUT_DIR, case.id + ".json"), "w") as handle:
        json.dump(outcome, handle, indent=1)


def test_catalogue_has_at_least_30_cases():
    assert len(CASES) >= 30
    assert len({c.id for c in CASES}) == len(CASES)


def test_docs_list_every_case():
    with open(os.path.join(ROOT, "docs", "RELIABILITY.md")) as handle:
        text = handle.read()
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", text, re.MULTILINE))
    assert listed >= {c.id for c in CASES}, sorted({c.id for c in CASES} - listed)
