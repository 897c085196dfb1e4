# syntax=docker/dockerfile:1.7
FROM python:3.12-slim AS base
ARG PIP_INDEX_URL
ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml uv.lock ./
RUN --mount=type=secret,id=pip_token,env=PIP_TOKEN \
    --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev
COPY . .
USER 10001
HEALTHCHECK CMD curl -fsS http://127.0.0.1:8765/health || exit 1
CMD ["ccmem", "serve", "--host", "0.0.0.0"]
