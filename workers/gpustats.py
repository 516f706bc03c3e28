"""GPU memory and utilisation of a worker's GPUs, read through NVML for the ops panel.

NVML is NVIDIA's management library (the one ``nvidia-smi`` reads); ``nvidia-ml-py`` is its
official Python binding (imported as ``pynvml``), an optional dependency (the ``gpu`` extra).
A worker without GPUs, or on a machine where the binding or the library is missing, reports no
readings (None), which the panel shows as "no GPU". NVML numbers GPUs as the host does
(``--gpus``); ``CUDA_VISIBLE_DEVICES`` does not renumber them.
"""

from __future__ import annotations

import logging
from types import ModuleType

from mtfleet.core.registry import GpuReading

log = logging.getLogger(__name__)

_MIB = 1024 * 1024


def _load_nvml() -> ModuleType | None:
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, driver not loaded...
        log.info("no GPU readings: NVML is not available (%s)", exc)
        return None
    return pynvml


class GpuStats:
    """Reads the worker's GPUs at each heartbeat; NVML is initialised once, on first use."""

    def __init__(self, gpus: list[int]) -> None:
        self.gpus = gpus
        self._nvml: ModuleType | None = None
        self._tried = False

    def read(self) -> list[GpuReading] | None:
        """One reading per GPU of this worker; None without GPUs or without NVML. A GPU that
        fails to answer is left out (the others are still read)."""
        if not self.gpus:
            return None
        if not self._tried:
            self._tried = True
            self._nvml = _load_nvml()
        nvml = self._nvml
        if nvml is None:
            return None
        out = []
        for index in self.gpus:
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                name = nvml.nvmlDeviceGetName(handle)
                try:
                    util: float | None = float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
                except nvml.NVMLError:  # not supported on some GPUs (and under MIG)
                    util = None
            except nvml.NVMLError as exc:
                log.warning("GPU %d: no NVML reading: %s", index, exc)
                continue
            out.append(
                GpuReading(
                    index=index,
                    name=name.decode() if isinstance(name, bytes) else str(name),
                    memory_used_mib=round(memory.used / _MIB, 1),
                    memory_total_mib=round(memory.total / _MIB, 1),
                    utilization_pct=util,
                )
            )
        return out
