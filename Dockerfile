# syntax=docker/dockerfile:1
#
# mtfleet images. Two targets:
#
#   docker build --target api    -t mtfleet-api    .   # API and Flower: no torch, no vLLM
#   docker build --target worker -t mtfleet-worker .   # GPU worker: vLLM + CUDA
#
# Pin the vLLM image to a tag or digest for production builds, e.g.
#   docker build --target worker --build-arg VLLM_IMAGE=vllm/vllm-openai:<tag> .

ARG PYTHON_IMAGE=python:3.11-slim
ARG VLLM_IMAGE=vllm/vllm-openai:latest

# ---------------------------------------------------------------------------------------------
# build: one pure-Python wheel of mtfleet, shared by both runtime targets (no sources shipped).
# ---------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# README* may be absent; the wildcard keeps the COPY valid either way.
COPY pyproject.toml README* ./
COPY core ./core
COPY formats ./formats
COPY api ./api
COPY workers ./workers
COPY producer ./producer
COPY fleet ./fleet
# mtfleet/ holds the package's __init__.py; pyproject.toml maps the folders above to
# mtfleet.core, mtfleet.api... in the wheel
COPY mtfleet ./mtfleet
RUN pip wheel --no-deps --wheel-dir /wheels .

# ---------------------------------------------------------------------------------------------
# api: FastAPI service (also runs `mtfleet flower`). Enqueues by task name, so it never needs
# torch or vLLM: the wheel with the extras it runs, [server] (the API) and [flower].
# ---------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS api
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN groupadd --system --gid 10001 mtfleet \
 && useradd --system --uid 10001 --gid mtfleet --create-home --home-dir /home/mtfleet mtfleet
COPY --from=build /wheels /wheels
RUN set -- /wheels/mtfleet-*.whl && pip install "$1[server,flower]" && rm -rf /wheels
USER 10001:10001
WORKDIR /home/mtfleet
EXPOSE 8000
# No curl in the slim image: ask /healthz with the standard library (non-2xx raises -> exit 1).
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/healthz', timeout=3)"]
CMD ["mtfleet", "api", "--host", "0.0.0.0", "--port", "8000"]

# ---------------------------------------------------------------------------------------------
# worker: one Celery worker per GPU group running vLLM. The base image already carries a CUDA
# build of torch and vLLM; they are pinned as constraints so installing mtfleet[server,gpu] (the
# worker and its engine) can never replace them with other builds.
# ---------------------------------------------------------------------------------------------
FROM ${VLLM_IMAGE} AS worker
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_BREAK_SYSTEM_PACKAGES=1 \
    HOME=/home/mtfleet \
    HF_HOME=/cache/huggingface
RUN groupadd --system --gid 10001 mtfleet \
 && useradd --system --uid 10001 --gid mtfleet --create-home --home-dir /home/mtfleet mtfleet \
 && mkdir -p /cache/huggingface \
 && chown -R mtfleet:mtfleet /cache
COPY --from=build /wheels /wheels
RUN python3 -m pip freeze | { grep -iE '^(torch|vllm)==' || true; } > /tmp/keep.txt \
 && set -- /wheels/mtfleet-*.whl \
 && python3 -m pip install --constraint /tmp/keep.txt "$1[server,gpu]" \
 && rm -rf /wheels /tmp/keep.txt
USER 10001:10001
WORKDIR /home/mtfleet
# The base image's entrypoint starts vLLM's OpenAI server; we run our own worker instead.
ENTRYPOINT []
# Per-container GPU ids are 0..N-1 (the container sees only the GPUs it reserved).
CMD ["mtfleet", "worker", "--engine", "vllm"]
