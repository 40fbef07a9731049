# A worker image for infra/aks/: a CUDA runtime, Python and the dagq worker agent from this
# repository. Build from the repository root:
#   docker build -f infra/aks/worker.Dockerfile -t <registry>/dagq-worker:<tag> .
# Tasks run inside this image, so add what they need on top (frameworks, your code), or build
# with your own image as BASE (it needs python3 >= 3.11 and python3-venv).
ARG BASE=nvidia/cuda:12.6.3-runtime-ubuntu24.04
FROM ${BASE}

RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 python3-venv ca-certificates \
    && rm -rf /var/lib/apt/lists/*

RUN python3 -m venv /opt/dagq
ENV PATH=/opt/dagq/bin:$PATH PYTHONUNBUFFERED=1

# Only what the agent needs: the package metadata and the two Python packages, at the versions
# the suite passed with (constraints.txt).
COPY pyproject.toml README.md constraints.txt /src/
COPY shared /src/shared
COPY worker_agent /src/worker_agent
RUN pip install --no-cache-dir -c /src/constraints.txt '/src[worker]' && rm -rf /src

# Tasks run as this unprivileged user (DAGQ_WORKER_TASK_USER); the agent runs as root with only
# the capabilities the manifests add, so tasks cannot read its environment or identity token.
RUN useradd --create-home --uid 10001 dagq-task
USER 0
WORKDIR /home/dagq-task
CMD ["dagq-worker", "--help"]
