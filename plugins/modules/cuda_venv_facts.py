#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_venv_facts
short_description: Diagnose a CUDA Python virtual environment
version_added: "1.0.0"
description:
  - Reads a Python venv from disk and reports every distribution, files missing or altered against their
    C(RECORD), paths owned by two wheels, every shared object's sonames resolved the way the real dynamic
    loader resolves them, which wheel provides each soname and for which CUDA major, the anchor's (for example
    torch's) requirement closure including extras, what importing the anchor really loads, and the GPU driver's
    limits.
  - Problems are reported as findings with stable codes (see the collection's C(docs/FINDINGS.md)).
  - Runs with the managed node's Python, never inside the venv it diagnoses; only the import probe and an
    interpreter query run the venv's interpreter, isolated (C(-I -B)), from an empty temporary directory, with a
    clean environment and a timeout.
  - Also reports what can make a healthy venv slow, under RV(ansible_facts.cuda_venv.performance) - which GPU
    architectures each CUDA extension carries kernels for (read from its C(.nv_fatbin) section, no GPU needed), the GPU's
    state (clocks, power, PCIe link, ECC, persistence and MIG mode, other processes), variables known to slow CUDA work
    in the activate scripts and in the processes running on the venv, and processes that still run files of an older
    generation of the venv.
  - Reads no wheel source unless given one (O(find_links), O(index_url), O(extra_index_urls)); with one, only when a
    C(CONTAMINATION_SOURCE) finding holds a residue, to say which version of an installed distribution (the anchor,
    what was reinstalled after the residue) requires it.
  - Changes nothing, but for the collection's own compiled code in the node user's cache (see the notes).
author:
  - gpuops.cuda_venv contributors (@gpuops)
extends_documentation_fragment:
  - gpuops.cuda_venv.attributes.FACTS
  - gpuops.cuda_venv.compiled_code
  - gpuops.cuda_venv.venv
  - gpuops.cuda_venv.venv.DIAGNOSIS
  - gpuops.cuda_venv.venv.WHEEL_SOURCES
  - gpuops.cuda_venv.venv.LOCK
requirements:
  - packaging (on the managed node's Python)
  - nvidia-ml-py (optional, for the GPU facts)
options:
  probe:
    description:
      - Import the anchor in a subprocess of the venv's interpreter and report the exact error, the libraries the
        process loaded (from C(/proc/self/maps)) with their owning distribution, and the library versions the
        anchor reports.
      - V(true) (or any boolean true) answers from the last import when nothing it depended on changed (with
        O(read_index), kept in the venv's state folder) - every file the import loaded or imported, the interpreter,
        C(pyvenv.cfg), the site-packages folders and their C(.pth) files, the folders of O(ld_library_path), the
        loader's cache and preload list, the anchor, and the GPU driver (C(/proc/driver/nvidia/version) and the
        C(/dev/nvidia*) nodes). Each file is compared by device, inode, size, mtime and ctime, and one changed in the
        second the last import ran, or later, is never trusted. The result then says C(probe.reused=true) and
        C(probe.reused_from). An import that timed out or was killed is never reused.
      - V(always) imports every run; V(false) never imports.
    type: raw
    default: true
  probe_timeout:
    description:
      - Seconds the import probe may take before it is killed and reported as timed out.
    type: float
    default: 120
  gpu:
    description:
      - Gather the GPU driver's facts through NVML (nvidia-ml-py). Without a GPU the facts say why.
    type: bool
    default: true
  gpu_archs:
    description:
      - Compute capabilities, as NVML writes them (C("8.0"), C("9.0"), C("12.0")), to judge the venv's CUDA extensions
        for instead of the GPUs NVML reports - for a node without a GPU, or a fleet being planned.
      - An extension with no machine code (SASS) and no PTX for one of them is finding C(KERNELS_MISSING); PTX only is
        C(KERNELS_PTX_ONLY).
    type: list
    elements: str
    default: []
    version_added: "1.1.0"
  read_index:
    description:
      - Reuse what an earlier run read from each ELF file (its dynamic section, its C(.nv_fatbin) kernels), from each
        dist-info folder (its METADATA, RECORD and INSTALLER, whether REQUESTED and C(direct_url.json) are there) and
        the digest of each conflicting file the import probe loaded (which wheel's bytes it runs) when the
        files are the same ones - same device, inode, size, mtime and ctime - and keep what this run read for the next, in
        C(read-index.json) of the venv's state folder C(.cuda_venv) (owner-only; created when absent only by the user
        who owns the venv, so that root's diagnosis of a user's venv leaves nothing the user's own repair cannot write).
      - A file changed in the second the run that wrote the index began, or later, is read again; an index that is
        corrupt, of another format, written by another version of the collection or for another venv is ignored and
        replaced. In check mode the index is used but not written.
      - C(false) reads every file and writes nothing.
    type: bool
    default: true
    version_added: "1.1.0"
  export_lock:
    description:
      - Write the venv as it is to this path on the node as a C(pylock.toml) (PEP 751), to declare other venvs by it
        (O(lock)); the result's C(exported_lock) says what was written.
      - Every installed distribution is locked at its installed version by C(uv pip compile --format pylock.toml
        --no-deps) for the venv's interpreter, from O(find_links), O(index_url), O(extra_index_urls) and O(no_index)
        with uv's own configuration; each package gets its wheels' names, URLs and sha256.
      - A distribution the sources do not offer at its installed version (a local build) is left out of C(packages)
        and named in the file's C([tool.gpuops-cuda-venv] not-locked) and in C(exported_lock.not_locked).
      - The file is written atomically, only when its text changes (then C(changed)); not in check mode. Needs uv (on
        C(PATH), beside the venv's or the module's Python; the role's tools venv has it).
      - C(pip install -r) (pip >= 26) and C(uv pip sync) install the written file.
    type: path
    version_added: "1.2.0"
notes:
  - Findings of severity C(error) make C(healthy) false; the module itself only fails on bad input (a path that is
    not a venv), never because the venv is broken.
seealso:
  - module: gpuops.cuda_venv.cuda_venv_repair
"""

EXAMPLES = r"""
- name: Diagnose the training venv
  gpuops.cuda_venv.cuda_venv_facts:
    path: /opt/venvs/train

- name: Verify every file's sha256 and use the workload's library path
  gpuops.cuda_venv.cuda_venv_facts:
    path: /opt/venvs/train
    verify: hash
    ld_library_path:
      - /usr/local/cuda/lib64

- name: Diagnose, and name the torch version of the local wheelhouse that left CUDA wheels behind
  gpuops.cuda_venv.cuda_venv_facts:
    path: /opt/venvs/train
    find_links:
      - /srv/wheelhouse
    no_index: true

- name: Diagnose against the lock the fleet is declared by (on the node), hashes of every locked wheel checked
  gpuops.cuda_venv.cuda_venv_facts:
    path: /opt/venvs/train
    lock: /srv/locks/pylock.toml
    find_links:
      - /srv/wheelhouse

- name: Write this venv out as a lock
  gpuops.cuda_venv.cuda_venv_facts:
    path: /opt/venvs/train
    export_lock: /tmp/pylock.toml

- name: Fail when the venv is not healthy, listing the findings
  ansible.builtin.assert:
    that: ansible_facts.cuda_venv.healthy
    fail_msg: "{{ ansible_facts.cuda_venv.findings | map(attribute='message') | list }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts about the venv.
  returned: always
  type: dict
  contains:
    cuda_venv:
      description: The diagnosis.
      returned: always
      type: dict
      contains:
        path:
          description: The venv root.
          type: str
          returned: always
        python:
          description: The venv interpreter (C(executable), C(version), C(ok), C(error)).
          type: dict
          returned: always
        site_packages:
          description: Every site-packages directory of the venv (lib and lib64, purelib and platlib).
          type: list
          elements: str
          returned: always
        distributions:
          description:
            - Every dist-info on disk, duplicates kept, with C(name), C(version), C(installer), C(cuda_major) and the
              evidence for it, C(files), C(missing), C(modified) and reading C(problems).
          type: list
          elements: dict
          returned: always
        conflicts:
          description:
            - Paths listed in two or more RECORDs, with C(owners), C(on_disk) (whose bytes, when known) and C(identical)
              (every RECORD lists the same hash, like the empty C(nvidia/__init__.py) of cu12 wheels, which is harmless).
            - C(on_disk) is known with O(verify=hash), and otherwise for the conflicting files the import probe loaded.
              Those the simulated load of the anchor maps are hashed while the probe runs (on the CPUs it leaves), the
              rest after it; the read index answers for a file that did not change.
          type: list
          elements: dict
          returned: always
        sonames:
          description: Soname to providers (C(distribution), C(path), C(cuda_major)).
          type: dict
          returned: always
        unresolved:
          description: Needed sonames found nowhere, per object, with C(loaded_at_import).
          type: list
          elements: dict
          returned: always
        fallbacks:
          description: CUDA sonames that resolve only outside the venv (loader cache, LD_LIBRARY_PATH, system dirs).
          type: list
          elements: dict
          returned: always
        import_graph:
          description: The objects importing the anchor loads, as the loader model resolves them.
          type: dict
          returned: always
          contains:
            entry_points:
              description: The anchor's objects the import opens first, in order.
              type: list
              elements: str
            preloaded:
              description: Soname to path of what torch's own preload of C(nvidia/*/lib) would load first.
              type: dict
            objects:
              description: The objects loaded when the import ends, in load order.
              type: list
              elements: str
            nodes:
              description:
                - Every object the import visited and every file a needed soname resolved to, each with C(path),
                  C(owners) (the distributions whose RECORD lists it), C(cuda_major) (of its first owner) and
                  C(loaded) (false when a failed dlopen unloaded it again, or never in the process).
              type: list
              elements: dict
              version_added: "1.0.0"
            edges:
              description:
                - One per DT_NEEDED entry of each visited object, C(object) needs C(soname), C(resolved) to that
                  path (null when found nowhere), C(via) the step that decided (rpath, runpath, cache, missing ...),
                  C(error) the loader's message for a bad file or a missing one, or null.
              type: list
              elements: dict
              version_added: "1.0.0"
        requirements:
          description: The anchor's requirement closure (extras and markers evaluated for the venv's interpreter).
          type: list
          elements: dict
          returned: always
        probe:
          description:
            - The import probe, C(ok), the exact C(error) line Python printed, C(loaded) libraries with their owning
              distribution, and C(versions) (torch, cuda, cudnn, nccl).
            - C(reused) is true when the result is the last import's, nothing it depended on having changed (see
              O(probe)); C(reused_from) is when that import ran (ISO 8601, UTC), else null.
          type: dict
          returned: always
        gpu:
          description:
            - Driver version, maximum CUDA version and devices from NVML, or C(available=false) and a reason.
            - C(pynvml_installed) is false when the Python the module runs with lacks pynvml (nvidia-ml-py).
          type: dict
          returned: always
        guard:
          description:
            - The install guard that M(gpuops.cuda_venv.cuda_venv_repair) writes with its O(gpuops.cuda_venv.cuda_venv_repair#module:guard)
              option - C(active) (bool), C(constraints) (the lines of its constraints file), C(constraints_file),
              C(honoured_by) (C(pip) - the venv's C(pip.conf) names it; C(uv_activated) - the activate scripts that
              export C(UV_CONSTRAINT); C(uv_config) - the C(uv.toml) holding it, or null) and C(problems) (why it no
              longer holds, also finding C(GUARD_STALE)).
          type: dict
          returned: always
        history:
          description:
            - The install transactions rebuilt from the dist-info folders, oldest first; those of unknown time last.
            - Each has C(number), C(time) (ISO 8601 UTC, or C(unknown) with a C(reason)), C(installer),
              C(distributions) and C(requested) (C(NAME VERSION) strings, REQUESTED marked ones), C(requested_means)
              (what REQUESTED says for that installer - pip marks what was asked for by name, uv every distribution),
              C(requested_by_name) (true for pip only) and C(duration).
            - A distribution's install spans the files it wrote (pip - every file; uv - its dist-info files); a run ends
              after 1 s with nothing written or where the installer changes (docs/FINDINGS.md, CONTAMINATION_SOURCE).
          type: list
          elements: dict
          returned: always
          sample:
            - number: 2
              time: "2026-12-03T18:53:02.469Z"
              installer: pip
              distributions: ["sglang-kernel 0.3.21", "nvidia-cudnn-cu13 9.24.0.43"]
              requested: ["sglang-kernel 0.3.21"]
              requested_means: "asked for by name: pip writes REQUESTED only for what its command line named"
              requested_by_name: true
              duration: 1.021
        contaminants:
          description:
            - The CUDA wheels and consumers nothing declared requires that evidence on disk proves wrong for this venv,
              each with C(distribution), C(cuda_major), C(evidence) (a list of C(kind) and C(text)) and C(held_by) (kept
              distributions outside the CUDA stack that require it). Each is also a CUDA_DIST_UNREQUIRED finding.
          type: list
          elements: dict
          returned: always
          sample:
            - distribution: "sglang-kernel 0.4.10"
              cuda_major: null
              evidence: [{kind: requirement_conflict, text: "requires torch==2.14.1; torch 2.9.1 is installed"}]
              held_by: []
        neighbours:
          description:
            - The CUDA wheels and consumers nothing declared requires and nothing proves wrong (torchvision, torchaudio,
              jax's CUDA plugins, cupy, the CUDA wheels they need), each with C(distribution), C(cuda_major), C(kind)
              (V(consumer) or V(library)) and C(why). Never a finding, never removed by default.
          type: list
          elements: dict
          returned: always
          sample:
            - distribution: "torchvision 0.24.1"
              cuda_major: 12
              kind: consumer
              why: "a CUDA 12 consumer requiring torch (==2.9.1) (torch 2.9.1); nothing on disk proves it wrong for this venv"
        read_index:
          description:
            - What O(read_index) did - C(reused) (ELF files and dist-info folders answered from the index), C(read) (those read), C(ignored) (why
              an index found was not used), C(saved) (kept for the next run) and C(note) (why not).
            - V(null) with O(read_index=false).
          type: dict
          returned: always
          sample: {"reused": 1665, "read": 0, "ignored": null, "saved": true, "note": null}
        lock:
          description:
            - With O(lock), the venv against it (docs/FINDINGS.md, C(LOCK_DRIFT)); null without.
            - C(name), C(kind) (pylock or requirements), C(packages) (how many it selects for this venv), C(hashed)
              (every one has hashes), C(matches) (no C(LOCK_DRIFT) at all), C(drift) (each C(LOCK_DRIFT)'s details with
              C(distribution) and C(kind)) and C(bytes) (per locked distribution installed at its version, the locked
              wheel compared, C(compared) and C(differing) file counts and C(examples), or why it was C(unchecked)).
          type: dict
          returned: always
          version_added: "1.2.0"
        exported_lock:
          description:
            - With O(export_lock), what was written - C(path), C(packages) (how many were locked), C(not_locked)
              (C(name==version) the sources do not offer), C(changed) and C(content) (the file's text).
          type: dict
          returned: when O(export_lock) is given
          version_added: "1.2.0"
        performance:
          description:
            - What can make the healthy venv slow (docs/FINDINGS.md, "Why a healthy venv is slow"); C(gathered) is
              false only where the facts were read without it (the repair's own reading).
          type: dict
          returned: always
          contains:
            gathered:
              description: Whether this part was read.
              type: bool
            kernels:
              description:
                - C(targets) - the GPUs judged (C(compute_capability), C(source) C(gpu_archs) or C(nvml), C(gpu), C(index));
                  none without O(gpu_archs) and without NVML.
                - C(extensions) - every shared object of the venv with a C(.nv_fatbin) section - C(path), C(distribution),
                  C(sass) (C(sm_90) ...), C(ptx) (C(compute_90) ...), C(flags) (the flag values of each architecture's
                  entries, as found), C(entries), C(containers), C(section_size), C(problem) (where reading stopped), C(error),
                  and C(verdicts) (compute capability to C(sass), C(ptx) or C(none)).
              type: dict
            gpus:
              description:
                - Each NVML device - C(index), C(name), C(compute_capability), C(clocks_mhz) (C(sm), C(sm_max), C(memory),
                  C(memory_max)), C(clock_event_reasons), C(performance_state), C(temperature_c), C(power_w) (C(limit),
                  C(default_limit), C(usage)), C(pcie) (C(generation), C(generation_max), C(width), C(width_max)), C(ecc)
                  (C(enabled), C(uncorrected_volatile), C(uncorrected_aggregate), C(retired_pages_pending),
                  C(remapped_rows_pending), C(remapping_failed)), C(persistence_mode), C(mig_mode) (C(current), C(pending)),
                  C(processes) (C(pid), C(used_memory_mib), C(visible) - the PID is in this node's C(/proc), NVML giving the
                  host's PIDs - and C(uses_venv)) and C(unsupported) (the fields NVML could not give).
              type: list
              elements: dict
            environment:
              description:
                - The variables known to slow CUDA work, where the venv's jobs get them - C(activate) (C(source), C(line),
                  C(name), C(value), C(slow)) from C(bin/activate), C(activate.fish), C(activate.csh); C(processes) (C(pid),
                  C(name), C(value), C(slow)) from the environment of the processes on the venv.
              type: dict
            processes:
              description:
                - The processes (this module's own aside) that map files of the venv or of its previous generations -
                  C(pid), C(cmdline), C(mapped) (files), C(stale) (how many of them are of an older generation) and
                  C(environment_error).
              type: list
              elements: dict
            restart_needed:
              description:
                - The processes still running files of an older generation of the venv (deleted by an in-place repair,
                  or moved aside by a swap) - C(pid), C(cmdline), C(stale) (the paths, as the kernel names them) and
                  C(reasons) (C(deleted), C(replaced), C(previous generation)). Also finding C(RESTART_NEEDED).
                - Empty when nothing needs a restart; hook a service restart to it.
              type: list
              elements: dict
              sample:
                - pid: 4242
                  cmdline: /opt/venvs/train/bin/python -m sglang.launch_server --port 30000
                  stale: ["/opt/venvs/train/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9 (deleted)"]
                  reasons: [deleted]
            seconds:
              description: What reading the kernels and the processes took.
              type: dict
        findings:
          description: Findings with C(code), C(severity), C(subject), C(message) and C(fix).
          type: list
          elements: dict
          returned: always
          sample:
            - code: SONAME_UNRESOLVED
              severity: error
              subject: libcudnn.so.9
              message: libcudnn.so.9, needed by torch/lib/libtorch_cuda.so (torch 2.9.1), is found nowhere.
        healthy:
          description: True when no finding has severity error.
          type: bool
          returned: always
        summary:
          description: One line saying what is wrong.
          type: str
          returned: always
          sample: "broken: 3 error(s): RECORD_MISSING_FILES, SONAME_UNRESOLVED, IMPORT_FAILED"
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.bytecode_cache import enable as enable_bytecode_cache

enable_bytecode_cache()  # first: the collection's code imported below is then compiled once per node, not per run

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.process_end import skip_last_collection
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.facts import gather_facts
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._entry.facts_entry import facts_arguments, facts_options
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.packaging_lib import HAS_PACKAGING, PACKAGING_IMPORT_ERROR


def main():
    skip_last_collection()  # the process's exit walks none of what the module read
    module = AnsibleModule(**facts_arguments())
    if not HAS_PACKAGING:
        module.fail_json(msg=missing_required_lib("packaging"), exception=PACKAGING_IMPORT_ERROR)
    try:
        facts = gather_facts(facts_options(module.params), SubprocessRunner(), keep_index=not module.check_mode,
                             export_to=module.params["export_lock"])
    except CudaVenvError as exc:
        module.fail_json(msg=str(exc), **exc.result)
    exported = facts.get("exported_lock")
    module.exit_json(changed=bool(exported and exported["changed"]), ansible_facts={"cuda_venv": facts})


if __name__ == "__main__":
    main()
