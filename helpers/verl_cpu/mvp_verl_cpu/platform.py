"""verl's CPU platform: what verl asks of a device, answered for the CPU, with
gloo for collectives. Registered with verl's PlatformRegistry
(verl/plugin/platform/platform_manager.py:29-86) under "cpu" and selected by
VERL_PLATFORM=cpu (platform_manager.py:92), which verl reads before probing:
without it verl finds no accelerator and falls back to "nvidia"
(platform_manager.py:113-117), CUDA and NCCL."""
import os
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Optional

import psutil
import torch
from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import PlatformRegistry

RESOURCE_ENV = "MVP_CPU_RAY_RESOURCE"


class CPUDeviceModule(ModuleType):
    """What verl calls on its `get_torch_device()` (utils/device.py:105), for the
    CPU: torch.cpu where it has the function, and the CUDA memory API answered
    as "nothing cached, the machine's free memory" (utils/memory_utils.py:47
    reads memory_reserved, for one)."""

    def __init__(self) -> None:
        super().__init__("mvp_verl_cpu.device")

    def __getattr__(self, name: str) -> Any:
        return getattr(torch.cpu, name)

    @staticmethod
    def memory_allocated(*args, **kwargs) -> int:
        return 0

    memory_reserved = max_memory_allocated = max_memory_reserved = memory_allocated

    @staticmethod
    def mem_get_info(*args, **kwargs) -> tuple:
        vm = psutil.virtual_memory()
        return vm.available, vm.total

    @staticmethod
    def empty_cache() -> None:
        return None

    @staticmethod
    def ipc_collect() -> None:
        return None

    @staticmethod
    def set_per_process_memory_fraction(*args, **kwargs) -> None:
        return None

    @staticmethod
    def get_device_name(*args, **kwargs) -> str:
        return "cpu"

    @staticmethod
    def manual_seed(seed: int) -> None:
        torch.manual_seed(seed)

    manual_seed_all = manual_seed

    @staticmethod
    def get_rng_state(*args, **kwargs) -> torch.Tensor:
        return torch.get_rng_state()

    @staticmethod
    def set_rng_state(state: torch.Tensor, *args, **kwargs) -> None:
        torch.set_rng_state(state)


@PlatformRegistry.register(platform="cpu")
class PlatformCPU(PlatformBase):
    """One 'device' per process, the CPU; collectives over gloo."""

    _device_module = CPUDeviceModule()

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> ModuleType:
        return self._device_module

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        # Chosen by name only (VERL_PLATFORM=cpu): verl's probe
        # (platform_manager.py:100-110) must never pick the CPU on a machine
        # with GPUs because this package happens to be importable.
        return False

    def current_device(self):
        # verl uses get_device_id() as a torch device too (utils/fsdp_utils.py:507
        # `.to(device=get_device_id())`): an index 0 would mean an accelerator.
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: Optional[int] = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        # Ray sets it for the logical GPUs verl asks for; torch's CPU build ignores it.
        return "CUDA_VISIBLE_DEVICES"

    @contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        # main_ppo: "GPU". verl counts free GPU/NPU resources before it starts
        # (single_controller/ray/base.py:229-242, _check_resource_available), so
        # its workers must take logical GPUs. sft_trainer_ray: "CPU" (its
        # bundles are {"CPU": 10, <this>: 1}, which "CPU" turns into {"CPU": 1}).
        return os.environ.get(RESOURCE_ENV, "CPU")

    def ray_noset_envvars(self) -> list:
        return []

    def ray_resource_options(self, num_gpus: float) -> dict:
        name = self.ray_resource_name()
        if name == "GPU":
            return {"num_gpus": num_gpus}
        if name == "CPU":
            return {"num_cpus": num_gpus}
        return {"resources": {name: num_gpus}}

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None
