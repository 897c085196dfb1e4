VERSION    ?= $(shell git describe --tags --always --dirty)
CACHE_KEY  := $(shell sha256sum uv.lock | cut -c1-16)
IMAGE      := ghcr.io/acme/api:$(VERSION)
SORT_KEY   ?= created_at

.PHONY: build push test

build:
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE) .

push: build
	@echo "$$GHCR_TOKEN" | docker login ghcr.io -u acme-bot --password-stdin
	docker push $(IMAGE)

test:
	uv run pytest -q --maxfail=1
