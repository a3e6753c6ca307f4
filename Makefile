# harnessd — run `make` for the list of targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash

GO      ?= go
BIN     ?= bin
ARGS    ?=
PKGS    ?= ./...
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -X github.com/harnessd/harnessd/harness.Version=$(VERSION)

.PHONY: help build install run test lint bench bench-scale bench-real bench-go bench-ci soak tidy fuzz clean

help: ## show this help (colours only on a terminal without NO_COLOR)
	@if [ -t 1 ] && [ -z "$$NO_COLOR" ] && [ "$$TERM" != dumb ]; then on='\033[36m'; off='\033[0m'; else on=; off=; fi; \
	grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk -v on="$$on" -v off="$$off" 'BEGIN {FS = ":.*?## "}; {printf "  %s%-10s%s %s\n", on, $$1, off, $$2}'

build: ## build bin/harnessd and bin/harness
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/harnessd ./cmd/harnessd
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/harness ./cmd/harness

install: ## install harnessd and harness into GOBIN (default $(go env GOPATH)/bin) and say whether it is on PATH
	$(GO) install -ldflags '$(LDFLAGS)' ./cmd/harnessd ./cmd/harness
	@dir="$$($(GO) env GOBIN)"; [ -n "$$dir" ] || dir="$$($(GO) env GOPATH | cut -d: -f1)/bin"; \
	echo "installed harnessd and harness in $$dir"; \
	case ":$$PATH:" in *":$$dir:"*) ;; *) echo "$$dir is not on your PATH: export PATH=\"$$dir:\$$PATH\" (and add that line to ~/.bashrc or ~/.zshrc)";; esac

run: build ## start the daemon on the default data dir (Badger in ~/.local/state/harnessd); ARGS=... for more flags
	$(BIN)/harnessd serve $(ARGS)

test: ## run every test with the race detector
	$(GO) test -race -count=1 -timeout=900s $(PKGS)

lint: ## go vet and staticcheck
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

bench: ## the bench suite: every case through every surface against its floor, then the hot-function benchmarks
	$(GO) run ./bench $(ARGS)
	$(GO) test -run='^$$' -bench=. -benchmem ./bench/

bench-scale: ## scale curves: generated repositories of FILES files (default 100,10000,100000), in process; TMPDIR=/dev/shm generates faster
	$(GO) run ./bench --files $(or $(FILES),100,10000,100000) $(ARGS)

bench-real: ## the live index on a real repository DIR (default: $(go env GOROOT)/src copied and committed as is in a temp dir) and a linked worktree of it, in process against git and rg
	$(GO) run ./bench --real $(or $(DIR),goroot) $(ARGS)

bench-go: ## every Go benchmark of every package
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)

bench-ci: ## the suite briefly and every Go benchmark once, so they keep compiling and working
	$(GO) run ./bench --iterations 5 --warmup 1
	$(GO) test -run='^$$' -bench=. -benchtime=1x $(PKGS)

soak: ## mixed load of SOAK_CLIENTS (default 32) MCP clients on a daemon for SOAK (default 5m); fails on errors or growth
	HARNESSD_SOAK=$(or $(SOAK),5m) HARNESSD_SOAK_CLIENTS=$(or $(SOAK_CLIENTS),32) $(GO) test -count=1 -timeout=0 -run='^TestSoak$$' -v ./cmd/harnessd/ $(ARGS)

fuzz: ## run each fuzz target for FUZZTIME (default 10s)
	@for t in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -h '^func Fuzz' $$t/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    echo "== $$t $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$${FUZZTIME:-10s} $$t || exit 1; \
	  done; \
	done

tidy: ## fail when go.mod or go.sum is out of date
	$(GO) mod tidy -diff

clean: ## remove build output
	rm -rf $(BIN)
