"""Two small shims on torch (never on verl) for what verl 0.9.1 does that a
CPU-only torch refuses. Installed once per process, by the package's import."""
import functools

import torch
import torch.distributed


def _one_backend_per_device(backend):
    """'cpu:gloo,cpu:gloo' -> 'cpu:gloo': the first backend named for each device."""
    if not isinstance(backend, str) or "," not in backend:
        return backend
    chosen: dict = {}
    for part in backend.split(","):
        device, _, name = part.partition(":")
        chosen.setdefault(device.strip(), part.strip())
    return ",".join(chosen.values())


def _dedupe_backend(init_process_group):
    # verl/utils/distributed.py:63 and :89 (initialize_global_process_group and
    # its _ray twin) pass backend=f"cpu:gloo,{device}:{backend}"; on the CPU
    # platform that names cpu twice and torch refuses it ("Duplicate device
    # type cpu in backend string").
    @functools.wraps(init_process_group)
    def wrapper(*args, **kwargs):
        if "backend" in kwargs:
            kwargs["backend"] = _one_backend_per_device(kwargs["backend"])
        elif args:
            args = (_one_backend_per_device(args[0]), *args[1:])
        return init_process_group(*args, **kwargs)

    wrapper.mvp_cpu_shim = True
    return wrapper


def _pin_memory_noop(self, *args, **kwargs):
    # verl/workers/engine/fsdp/transformer_impl.py:459-463 gives every
    # forward-only engine (the reference model) CPUOffloadPolicy(pin_memory=True);
    # FSDP2 then pins its parameters, and pinning needs an accelerator
    # ("Cannot access accelerator device", torch/distributed/fsdp/_fully_shard/_fsdp_param.py).
    # Without one, pinned and pageable memory are the same memory.
    return self


def install() -> None:
    if not getattr(torch.distributed.init_process_group, "mvp_cpu_shim", False):
        torch.distributed.init_process_group = _dedupe_backend(torch.distributed.init_process_group)
    if not torch.accelerator.is_available():
        torch.Tensor.pin_memory = _pin_memory_noop
