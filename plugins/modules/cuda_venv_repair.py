#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_venv_repair
short_description: Converge a CUDA Python venv to its declared wheels in staged, reversible batches
version_added: "1.0.0"
description:
  - Diagnoses the venv like M(gpuops.cuda_venv.cuda_venv_facts), then plans and runs the repair that works for
    colliding CUDA wheels - remove the colliding wheels first, then force-reinstall the wheels they overwrote or
    deleted, by name and without deps, from the given wheel sources, then install missing requirements.
  - The declared set is the anchor's requirement closure (extras and markers included) plus O(packages).
  - Each batch runs under a lock, after a snapshot of the whole venv (hard links, so it costs metadata operations
    only); after each batch the import probe (and O(probe_command)) runs; a failed install or a test that got
    worse restores the snapshot byte for byte and the module fails with the installer's or the probe's message.
  - A journal in C(PATH/.cuda_venv/) records each phase; a run that finds an interrupted one rolls it back first
    and says so in RV(recovered).
  - Before anything is installed, every wheel the plan installs or reinstalls is read (from O(find_links) with
    O(no_index), else fetched by pip into C(PATH/.cuda_venv/downloads), removed again at once) and the plan is
    refused, changing nothing, when a wheel would overwrite a file another installed distribution (or another wheel
    of the plan) owns with other bytes (finding C(INSTALL_WOULD_OVERWRITE)), or is built for another CUDA major than
    the anchor (C(INSTALL_CUDA_MAJOR_MISMATCH)). A distribution the plan removes first frees its paths (a planned
    replacement, said in the install's reason).
  - With O(strategy=swap) (the default wherever it can work) the batches run on a hard-linked copy of the venv
    beside it (C(PARENT/.NAME.cuda_venv/next)); the copy is verified and then exchanged with the venv in one atomic
    step (C(renameat2) with C(RENAME_EXCHANGE)), so the venv path never holds a half-repaired venv and a failure
    leaves the venv untouched. The old venv is kept as the previous generation (O(keep_previous)); O(swap_back)
    brings it back.
  - C(changed) comes from comparing the inventory (name, version) and file state before and after, never from
    installer output. A healthy venv with nothing to prune runs no installer and reports C(changed=false).
  - A run reads the venv first through the read index that M(gpuops.cuda_venv.cuda_venv_facts) keeps (see
    O(plan_only)). A venv with nothing to do is answered from it, and the index is kept for the next run. With
    anything to do, every file is read again before the plan is made, unless the index answered nothing (that first
    reading then read every file itself).
author:
  - gpuops.cuda_venv contributors (@gpuops)
extends_documentation_fragment:
  - gpuops.cuda_venv.attributes
  - gpuops.cuda_venv.compiled_code
  - gpuops.cuda_venv.venv
  - gpuops.cuda_venv.venv.DIAGNOSIS
  - gpuops.cuda_venv.venv.WHEEL_SOURCES
  - gpuops.cuda_venv.venv.LOCK
attributes:
  check_mode:
    support: full
    details:
      - Returns the whole plan and changes nothing. A plan the install check refuses fails, showing the refusal and
        its files. Wheels it must fetch from an index go to a folder of C(PATH/.cuda_venv), removed before it returns.
  diff_mode:
    support: full
    details: Inventory (name==version) and damaged files before and after.
requirements:
  - packaging (on the managed node's Python)
  - pip in the venv, or uv on the node
options:
  packages:
    description:
      - PEP 508 requirements added to the declared set, for example C(torch==2.9.1) or
        C(nvidia-cudnn-cu12==9.10.2.21). Missing or mismatched ones are installed without deps.
      - When they name another anchor version than the installed one, the declared set is what the venv's installer
        resolves for them (C(uv pip compile), C(pip install --dry-run --ignore-installed --report), with its own
        configuration and the wheel sources given here) - the closure, the CUDA major and the contaminants are the
        declared anchor's, and the new anchor is installed first. The result's RV(declared) says what was resolved.
      - Not with O(lock), which declares every package itself.
    type: list
    elements: str
    default: []
  remove:
    description: Distribution names to remove explicitly (for example C(sgl-kernel)). Must not be in the declared set.
    type: list
    elements: str
    default: []
  prune:
    description:
      - C(cuda) removes the contaminants - CUDA wheels and CUDA consumers outside the declared set that evidence on disk
        proves wrong for this venv (built for another CUDA major than the anchor, installing paths a kept wheel owns,
        requiring an anchor version or build that is not the one installed or pinned, shipping another build of a
        library the anchor loads, or requiring such a contaminant). Each removal in the plan carries its C(evidence).
        A wheel with builds for several CUDA majors (one of them the anchor's), a path nothing loads at run time, and
        a dependency of the application the user installed are no evidence. A contaminant a kept distribution
        requires is kept (or replaced by a version both allow, as the installer resolves it); a consumer whose only
        fault is another CUDA major and that harms nothing is kept with a warning.
        Neighbours - torchvision, torchaudio, jax and its CUDA plugins, cupy and the CUDA wheels they need, on the
        anchor's CUDA major - are kept. Before 1.1.0 it removed every CUDA wheel and consumer the anchor does not
        require; name those in O(remove) (or use C(all)) to remove them now.
      - C(none) removes only what O(remove) names.
      - C(all) removes every distribution outside the declared set (like C(uv pip sync)), except pip,
        setuptools, wheel and uv.
    type: str
    choices: [cuda, none, all]
    default: cuda
  revert_edits:
    description:
      - Also force-reinstall distributions outside the CUDA stack whose files differ from RECORD or are missing
        although no other wheel wrote them (a hand-edited model library, deleted files). Their
        C(RECORD_MODIFIED_FILES) and C(RECORD_MISSING_FILES) findings are warnings, and by default the repair
        leaves such files exactly as they are.
      - The CUDA stack is every owner of a path another wheel also lists, the cu12/cu13 colliding families, the
        anchor, every owner of a shared object the anchor's import loads or needs, CUDA wheels and known CUDA
        consumers; these are always reinstalled when damaged.
    type: bool
    default: false
  with_dependencies:
    description:
      - A O(packages) entry that is not installed yet also brings its dependencies, as the installer resolves them
        (C(pip install --dry-run --report), C(uv pip install --dry-run)); each resolved wheel joins the plan pinned
        (C(name==version), installed without deps) and is checked like every other before anything is installed.
      - When false, the entry is installed without deps and what it requires is installed by the next planning
        round, each round's wheels checked before that round changes anything.
    type: bool
    default: false
  backend:
    description:
      - C(pip) runs the venv's C(python -m pip), honouring the node's pip configuration.
      - C(uv) runs C(uv pip --python VENV/bin/python); uv reads its own configuration, not pip's.
      - C(auto) follows the installer the venv's distributions record (their C(INSTALLER) file). uv for a venv made
        by uv (which has no pip), the venv's own pip for one made by pip; the other one when the first is missing.
        Fails, naming every place looked in, when the venv has no pip and no uv is found. pip is never installed
        into the venv.
    type: str
    choices: [auto, pip, uv]
    default: auto
  uv_executable:
    description:
      - Path of the uv executable for O(backend=uv) or O(backend=auto).
      - Default the first C(uv) found on C(PATH), beside the venv's interpreter (the venv's C(bin) and the folder of
        the Python it was made from), in the per-user folders (C(UV_INSTALL_DIR), C(XDG_BIN_HOME), C(~/.local/bin),
        C(CARGO_HOME/bin) or C(~/.cargo/bin)), then beside the module's own Python (the role's tools venv).
    type: path
  batch_size:
    description: At most this many units (a colliding wheel with its co-owners, a damaged wheel, an install) per batch.
    type: int
    default: 4
  batch:
    description:
      - Run only this batch (1-based) of the current plan, for roles that drive batches one task at a time. Default
        all batches, re-planning until the venv converges.
    type: int
  probe:
    description: Import the anchor after each batch, as M(gpuops.cuda_venv.cuda_venv_facts) does.
    type: bool
    default: true
  probe_command:
    description:
      - A check of your own run after each batch, for example a tiny training step, as an argv list (no shell),
        with absolute paths such as C(/opt/venvs/train/bin/python). It runs from an empty directory with a clean
        environment; a check that passed before a batch and fails after it rolls the batch back.
    type: list
    elements: str
    default: []
  probe_timeout:
    description: Seconds each probe may take.
    type: float
    default: 300
  installer_timeout:
    description: Seconds each installer command may take before it is killed and the batch restored.
    type: float
    default: 3600
  lock_timeout:
    description: Seconds to wait for another repair of the same venv to finish; C(0) fails at once.
    type: float
    default: 0
  strategy:
    description:
      - How the venv is changed.
      - C(swap) copies the venv beside itself on the same filesystem (new directories, hard-linked files, so it
        costs metadata only), runs every batch and its test on the copy, makes the paths the installers wrote into
        the copy (console-script shebangs and their RECORD rows, bytecode) name the venv's own path, verifies the
        copy (the tests, and every reinstalled wheel hashed against its RECORD), then exchanges the two directories
        atomically. Any failure discards the copy; the venv was never changed. Processes already running keep the
        files they opened; a process started after the exchange sees only the repaired venv. Where the kernel or
        filesystem refuses the exchange, two C(rename) calls do it, with the venv path missing between them (a
        killed run is completed by the next). O(probe_command) arguments under the venv's path are pointed at the
        copy while it is tested.
      - On the copy, a batch before the plan's last is tested with the facts and a light loader test - a
        subprocess of the venv's interpreter loads the anchor's compiled parts with the real loader, in the order
        its import does (torch - C(lib/libtorch_global_deps.so), then C(torch._C)), without running its Python;
        the same loader messages for about a third of the time of C(import torch). If it fails, the import itself
        decides. The venv as found gets the light test too. The last batch always gets the full test (the import
        and O(probe_command)); if anything in it fails, the copy is compared with the venv's own full test, run
        then. In place, every batch and the venv as found get the full test.
      - C(in_place) changes the venv itself, batch by batch, each batch restored from its snapshot on failure.
      - C(auto) uses C(swap) and falls back to C(in_place) where a swap cannot work, saying why in
        RV(strategy_reason) - the venv root is a mount point (for example bind-mounted into a container), its
        parent directory is not writable, the copy would cross filesystems, the free space or inodes of the
        filesystem are short for what the plan writes, or O(batch) is set. C(swap) fails with that reason instead.
    type: str
    choices: [auto, swap, in_place]
    default: auto
  keep_previous:
    description:
      - After a swap, how many previous generations of the venv to keep beside it, in
        C(PARENT/.NAME.cuda_venv/previous/RUN) (hard links, so only files the repair replaced take space). C(0) keeps
        none. Facts and repairs never read them as part of the venv.
    type: int
    default: 1
  swap_back:
    description:
      - Exchange the venv with its newest previous generation, atomically, and do nothing else. Running it again swaps
        forward. Fails when there is no previous generation.
    type: bool
    default: false
  verify_before_swap:
    description:
      - With the swap strategy, once the repaired copy is verified and before the exchange, benchmark the copy and the
        live venv side by side (live, copy, live, copy, ... O(benchmark.repeats) times each) with the measurements of
        O(benchmark), and keep the live venv when the copy is slower beyond the noise band and below
        O(benchmark.min_ratio) - no exchange, the copy discarded, the task failed with C(changed=false) and the
        comparison in RV(swap_benchmark).
      - The copy runs O(benchmark.command) with every argument under the venv's path pointed at the copy.
      - Without a GPU the built-in measurements are skipped (said in RV(swap_benchmark)); without a O(benchmark.command)
        too, nothing is compared and the swap proceeds. A live venv that cannot be measured (torch does not import,
        the reason it is repaired) is not compared either.
      - Needs O(strategy=swap) or O(strategy=auto); when auto repairs in place, RV(swap_benchmark) says why nothing was
        compared.
    type: bool
    default: false
  benchmark:
    description:
      - What O(verify_before_swap) measures and how it judges; the options of M(gpuops.cuda_venv.cuda_venv_benchmark)
        of the same names. Only with O(verify_before_swap=true).
    type: dict
    suboptions:
      matmul_size:
        description: Side n of the square bf16 matrices; each multiply counts 2 n^3 operations.
        type: int
        default: 8192
      matmul_iterations:
        description: Timed multiplies.
        type: int
        default: 50
      warmup_iterations:
        description: Untimed multiplies and copies before each timed run.
        type: int
        default: 5
      copy_mib:
        description: MiB per device-to-device copy.
        type: int
        default: 1024
      copy_iterations:
        description: Timed copies.
        type: int
        default: 20
      device:
        description: CUDA device index.
        type: int
        default: 0
      command:
        description:
          - A workload of your own (for example a short training step) as an argv list, no shell, with absolute
            paths such as C(/opt/venvs/train/bin/python). It runs after the built-in measurements (with or without a
            GPU), from an empty directory with a clean environment; its throughput is read from its output with
            O(benchmark.command_regex).
        type: list
        elements: str
        default: []
      command_regex:
        description:
          - Regular expression (Python syntax) whose last match in the command's output (stdout then stderr, last 4000
            characters) captures the throughput, in its only group or a group named C(value).
          - "For example, the regex 'throughput: ([0-9.]+) samples/s' reads 1234.5 from 'throughput: 1234.5 samples/s'.
            Required with O(benchmark.command)."
        type: str
      command_timeout:
        description: Seconds the command may take, per run.
        type: float
        default: 600
      min_ratio:
        description:
          - The copy is kept out when a metric's median is below this fraction of the live venv's and below the noise
            band. The default keeps out any drop beyond the band.
        type: float
        default: 1.0
      repeats:
        description:
          - Runs of each measurement (the built-in ones and O(benchmark.command)); each metric's median is compared.
        type: int
        default: 3
      noise:
        description:
          - The narrowest noise band, a fraction - 0.02 is 2%, the run-to-run variation measured on an H200 for the
            matmul and for a training step's tokens/s. The band is widened to 4 times the ratio's relative standard
            deviation that both sides' repeats give (on an H200, two back-to-back sets of three matmul runs of an
            unchanged venv had medians 5.9% apart, a band of about 7.6% there).
        type: float
        default: 0.02
      timeout:
        description: Seconds the built-in measurements may take, per run.
        type: float
        default: 600
  guard:
    description:
      - When the venv ends healthy (after a repair, or with nothing to repair), install its install guard, so that
        the next C(pip install) or C(uv pip install) that would move its CUDA stack is refused by that installer's own
        resolver - a constraints file in C(PATH/.cuda_venv/guard/constraints.txt) pinning the anchor and each CUDA
        wheel of its closure C(==) their installed versions and refusing each colliding family of the other CUDA major
        (C(NAME<0)); the venv's C(pip.conf) naming it in C([install] constraint) (merged into the user's file, whose
        own settings stay); C(UV_CONSTRAINT) exported by the venv's activate scripts (sh, fish, csh, nushell) and
        undone by C(deactivate).
      - Renewed from what is installed after every converge, so a declared change (another anchor version in
        O(packages)) moves it too. The module's own installs are not held by it (pip runs with
        C(PIP_CONSTRAINT=/dev/null), uv without C(UV_CONSTRAINT)).
      - C(false) removes a guard an earlier run installed and gives the user's C(pip.conf), activate scripts and
        C(uv.toml) back byte for byte (or, where the user edited them since, without the guard's lines only).
      - pip started with C(PIP_CONFIG_FILE) set (C(/dev/null) included), and uv run without the activated venv
        (unless O(guard_uv_config) is set), do not see it; the facts then report C(GUARD_STALE) once the venv moved.
        pip's C(--isolated) still reads the venv's C(pip.conf) (pip 24).
    type: bool
    default: false
  guard_uv_config:
    description:
      - Also write the guard's constraints as top-level C(constraint-dependencies) into uv's C(user) configuration
        (C($XDG_CONFIG_HOME/uv/uv.toml), else C(~/.config/uv/uv.toml)) or C(system) one (the first
        C(DIR/uv/uv.toml) of C($XDG_CONFIG_DIRS), else C(/etc/uv/uv.toml)), so that uv honours them without the venv
        activated (C(uv pip install --python PATH/bin/python)).
      - Trade-off - uv applies that file to every environment of that user (or host), so it is refused when the file
        already holds another venv's guard or sets C(constraint-dependencies) itself; use it for a host with one
        guarded venv. The repair's own uv runs take the lines out while they install and put the renewed ones back.
    type: str
    choices: [none, user, system]
    default: none
  gpu_archs:
    description:
      - Compute capabilities, as NVML writes them (C("8.0"), C("9.0")), of the GPUs the venv must run on; without
        them, those NVML reports on the node (none, where it has no GPU or no NVML).
      - Before any change, every wheel of O(packages) the plan installs is read (the C(.nv_fatbin) section of each
        shared object inside it), and one with no kernel (no machine code, no PTX) for one of these GPUs is refused
        with C(INSTALL_NO_KERNEL), naming the wheel, the library and the architectures it has.
    type: list
    elements: str
    default: []
    version_added: "1.1.0"
  facts:
    description:
      - In check mode, also return the venv's facts as RV(ansible_facts.cuda_venv), what
        M(gpuops.cuda_venv.cuda_venv_facts) returns (with the import probe when O(probe) is on, and the GPU driver's
        limits), from the same reading of the venv that plans the repair - one diagnosis for both. The anchor's
        closure in them includes O(packages).
      - The plan is made as a real run would make it - from the venv's files, never from the probe's result.
      - Needs check mode or O(plan_only); a real run fails at once and changes nothing (after a repair, diagnose with
        M(gpuops.cuda_venv.cuda_venv_facts)).
    type: bool
    default: false
    version_added: "1.1.0"
  plan_only:
    description:
      - Plan and report as check mode does - the same result, C(changed) included (what a run would change) - and
        change nothing in the venv, also outside check mode.
      - The plan that changes nothing (check mode or this) reads the venv through the read index of
        M(gpuops.cuda_venv.cuda_venv_facts) (its O(gpuops.cuda_venv.cuda_venv_facts#module:read_index)). ELF files and
        dist-info folders that are the same files as when the index was written are answered from it, and the import
        probe from the last one's result when nothing it loaded or depended on changed. Outside check mode this option
        also keeps the index for the next plan (C(read-index.json) in the venv's state folder), as the facts module
        does. A real run reads through the index too, but only to find out that there is nothing to do; with
        anything to do it reads every file again before it plans (unless the index answered nothing).
      - The role's diagnosis uses it, so that a pass over an unchanged venv does not import the anchor again.
    type: bool
    default: false
    version_added: "1.1.0"
seealso:
  - module: gpuops.cuda_venv.cuda_venv_facts
"""

EXAMPLES = r"""
- name: Repair the incident venv from a local wheelhouse
  gpuops.cuda_venv.cuda_venv_repair:
    path: /opt/venvs/train
    find_links: [/srv/wheelhouse]
    no_index: true
    packages:
      - torch==2.9.1

- name: Converge the venv to the fleet's lock (read on the controller), removing what it does not lock
  gpuops.cuda_venv.cuda_venv_repair:
    path: /opt/venvs/train
    lock: files/golden.pylock.toml
    lock_content: "{{ lookup('ansible.builtin.file', 'files/golden.pylock.toml') }}"
    find_links: [/srv/wheelhouse]
    prune: all

- name: Plan only
  gpuops.cuda_venv.cuda_venv_repair:
    path: /opt/venvs/train
    index_url: "{{ vault_private_index }}"
  check_mode: true
  register: plan

- name: Plan and diagnose, keeping the read index for the next pass (also outside check mode)
  gpuops.cuda_venv.cuda_venv_repair:
    path: /opt/venvs/train
    plan_only: true
    facts: true
  register: plan
"""

RETURN = r"""
ansible_facts:
  description: The venv's facts, as M(gpuops.cuda_venv.cuda_venv_facts) returns them (see O(facts)).
  returned: in check mode or with O(plan_only), with O(facts=true)
  type: dict
  contains:
    cuda_venv:
      description: The facts module's RV(gpuops.cuda_venv.cuda_venv_facts#module:ansible_facts.cuda_venv).
      type: dict
plan:
  description: The batches (each with C(actions) and the finding codes it C(answers)) and what cannot be fixed.
  returned: always
  type: dict
  contains:
    batches:
      description:
        - In order; each has C(batch) (its number), C(title), C(actions) and C(answers) (finding codes).
        - An action has C(action) (V(remove), V(reinstall) or V(install)), C(name), C(requirement) (what the installer
          gets) and C(reason).
        - The removal of a distribution whose RECORD lists paths leaving the venv also has C(record) and C(outside),
          the entries cut from that RECORD before the installer reads it.
        - A removal by O(prune=cuda) also has C(evidence), what on disk proves the distribution wrong for this venv, a list
          of C(kind) and C(text) (docs/FINDINGS.md, CUDA_DIST_UNREQUIRED).
      returned: always
      type: list
      elements: dict
    unfixable:
      description:
        - What the plan will not do, each with the reason and what to do by hand, for example an anchor that is not
          installed and has no version in O(packages), or a wheel whose RECORD paths leave the venv.
      returned: always
      type: list
      elements: str
batches:
  description:
    - What ran per batch - the exact argv of each installer command, its return code, and the result.
    - C(test) says what tested the batch once its commands ran - V(facts + import) (the facts read again and the
      anchor imported, plus V(+ probe_command) when one is set), V(facts + loader) (a batch on the swap's copy
      before the plan's last, see O(strategy)), or V(facts) when O(probe) is off.
  returned: always
  type: list
  elements: dict
recovered:
  description: What was rolled back from an interrupted earlier run, or null.
  returned: always
  type: dict
pending_recovery:
  description:
    - What a real run would recover first - a batch an interrupted run left open, or what a killed swap left (its
      unfinished run, a leftover copy). Check mode counts it as a change.
  returned: in check mode or with O(plan_only), when there is something to recover
  type: str
healthy:
  description:
    - True when no error finding remains. A run (not in check mode, not one O(batch)) that would leave it false fails,
      naming the errors; a swap's copy is then discarded and the venv is unchanged.
  returned: always
  type: bool
declared:
  description:
    - The declared state as the venv's installer resolved it, when O(packages) names another anchor than the installed
      one or a held contaminant is replaced - C(request) (what the installer was asked), C(pins) (every distribution of
      the closure as C(name==version), the versions the repair converges to), C(resolved_by) (pip or uv) and C(note)
      (replacements left out, and why).
  returned: when a resolution was needed
  type: dict
  sample: {"request": ["torch==2.9.1"], "pins": ["torch==2.9.1", "triton==3.5.1"], "resolved_by": "uv"}
findings:
  description: The findings that remain (same shape as the facts module's).
  returned: always
  type: list
  elements: dict
summary:
  description: One line.
  returned: always
  type: str
verified:
  description: sha256 verdict of every installed or reinstalled distribution against its RECORD.
  returned: success
  type: dict
refused:
  description:
    - The findings (C(INSTALL_WOULD_OVERWRITE), C(INSTALL_CUDA_MAJOR_MISMATCH), C(INSTALL_NO_KERNEL)) that refused the
      plan before any change, each naming the wheel, the paths (shared objects first) with their current owners, or
      the library without a kernel for the GPU and the architectures it has, and the way out.
      They also lead RV(findings).
  returned: when the plan is refused
  type: list
  elements: dict
restart_needed:
  description:
    - The processes that still run files of an older generation of the venv after the run (files an in-place repair
      replaced, or the tree a swap moved aside), as RV(gpuops.cuda_venv.cuda_venv_facts#module:ansible_facts.cuda_venv.performance.restart_needed)
      - C(pid), C(cmdline), C(stale) (paths as the kernel names them) and C(reasons). Hook a service restart to it.
  returned: success, not in check mode nor with O(plan_only)
  type: list
  elements: dict
strategy:
  description: The strategy used (V(swap), V(in_place) or V(swap_back)); null when there was nothing to repair. In check
    mode, the strategy the run would use.
  returned: always
  type: str
strategy_reason:
  description: Why that strategy, for example why a swap fell back to C(in_place).
  returned: always
  type: str
previous:
  description: Where the previous generation was kept after a swap (null when O(keep_previous=0)).
  returned: after a swap
  type: str
exchange:
  description: How the directories were exchanged - V(renameat2) (atomic) or V(renames) (the fallback).
  returned: after a swap
  type: str
swap_benchmark:
  description:
    - The side-by-side benchmark of O(verify_before_swap) - C(status) (V(compared), V(skipped), V(live_unmeasured),
      V(copy_failed)), C(reason), C(live) and C(copy) (each C(metrics) (medians), C(runs), C(spread)), C(comparison)
      (per metric C(value) (the copy's), C(baseline) (the live venv's), C(ratio), C(band), C(verdict), C(ok)),
      C(regressions), C(repeats), C(noise), C(min_ratio), C(kept_live) and a one-line C(summary).
  returned: with O(verify_before_swap=true), in a real run whose plan had batches
  type: dict
rewritten:
  description: Files the installers wrote into the copy naming its path, rewritten to name the venv's (relative paths).
  returned: after a swap
  type: list
  elements: str
guard:
  description:
    - The venv's install guard (see O(guard)) - C(active), C(constraints), C(constraints_file), C(honoured_by)
      (C(pip), C(uv_activated), C(uv_config)), C(problems) (as in the facts), C(changed) (the files this run changed
      or, in check mode, would change; their diffs follow the inventory's in C(--diff)) and C(skipped) (activate
      scripts left alone, or why the guard was not renewed).
  returned: always
  type: dict
backend:
  description: The installer used.
  returned: when not in check mode nor with O(plan_only)
  type: str
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.bytecode_cache import enable as enable_bytecode_cache

enable_bytecode_cache()  # first: the collection's code imported below is then compiled once per node, not per run

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.process_end import skip_last_collection
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._entry.repair_entry import repair_arguments, repair_from_params
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.packaging_lib import HAS_PACKAGING, PACKAGING_IMPORT_ERROR


def main():
    skip_last_collection()  # the process's exit walks none of what the module read
    module = AnsibleModule(**repair_arguments())
    if not HAS_PACKAGING:
        module.fail_json(msg=missing_required_lib("packaging"), exception=PACKAGING_IMPORT_ERROR)
    try:
        result = repair_from_params(module.params, SubprocessRunner(), check_mode=module.check_mode, diff=module._diff)
    except CudaVenvError as exc:
        module.fail_json(msg=str(exc), **exc.result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
