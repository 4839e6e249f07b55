# Every go command run from here builds go-sqlite3 with FTS5.
export GOFLAGS := -tags=sqlite_fts5
export CGO_ENABLED := 1

BIN := bin/switchboard
CONFIG ?= config.example.yaml

.PHONY: run build release test test-interop deps lint bench fuzz clean

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
RELEASE_BIN ?= bin/switchboard-linux-amd64

run: build
	./$(BIN) --config $(CONFIG) run

build:
	go build -o $(BIN) ./cmd/switchboard

# release: a statically linked linux/amd64 binary (SQLite included; no glibc
# needed at run time) with its version, commit and date stamped.
release:
	GOOS=linux GOARCH=amd64 go build -trimpath -tags 'sqlite_fts5 osusergo netgo sqlite_omit_load_extension' \
		-ldflags "-s -w -linkmode external -extldflags '-static' -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)" \
		-o $(RELEASE_BIN) ./cmd/switchboard
	@file $(RELEASE_BIN) 2>/dev/null || true

test: deps
	go vet ./...
	go test -race -timeout 12m ./...

# test-interop: the tests against software installed from the npm registry
# (build tag interop): the real Claude Code and Codex CLIs as agents, and the
# official MCP TypeScript SDKs and Inspector as clients of our MCP servers.
# The packages are pinned and cached (~/.cache/switchboard-test/npm,
# cmd/switchboard/testdata/interop/node_modules). RUN=TestX picks one; the
# default is every test in the files tagged interop.
RUN ?= ^(TestMCPInterop|TestMCPConformanceHTTP|TestE2EClaudeCode|TestE2EClaudeCodeApprovals|TestE2EClaudeCodeSteerAndStop|TestCodexRealCLI|TestLiveClaudeCode|TestLiveCodex)$$
test-interop: NEED_NODE := 1
test-interop: deps
	go vet -tags=sqlite_fts5,interop ./cmd/switchboard/
	go test -tags=sqlite_fts5,interop -race -timeout 12m -count=1 -run '$(RUN)' ./cmd/switchboard/

# deps makes sure of what the tests need on a fresh machine, so that no test
# skips: bubblewrap (the agent sandbox), chromium (the browser tests of the
# web chat and the status page), iproute2 (the remote-turn test in a network
# namespace) and systemd (systemd-analyze verifies the unit in docs/deploy.md),
# installed when running as root; for test-interop also Node and
# npm (they install the pinned CLIs and SDKs).
deps:
	@missing=""; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v ip >/dev/null 2>&1 || missing="$$missing iproute2"; \
	command -v systemd-analyze >/dev/null 2>&1 || missing="$$missing systemd"; \
	if [ -n "$(NEED_NODE)" ]; then \
		command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
		command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	fi; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "installing$$missing (needed by the tests)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
		else \
			echo "the tests need$$missing: sudo apt-get install$$missing" >&2; exit 1; \
		fi; \
	fi

lint:
	gofmt -l . | tee /dev/stderr | (! read)
	go vet ./...

# bench runs the benchmarks of issue 33 and prints one table (each figure,
# its floor measured in the same run, the ratio and the goal;
# internal/benchtable): the hot paths (BENCH, by name, in every package) and
# the real binary at scale (cmd/switchboard: start-up, find_messages over
# MCP, CLI, overload) on one installation internal/scalegen makes,
# SCALE_ARGS big (10,000 groups, 100,000 chats, 10 million messages: about
# 4 GB in $TMPDIR while it runs, removed after). Everything it ran is in
# bin/bench.out. A quicker run:
#   make bench SCALE_ARGS='-scale.groups=1000 -scale.chats=10000 -scale.messages=1000000'
BENCH ?= Deliver|IngestHTTP|ToolsCall|Resolve10000|TurnStartOverhead|FindMessages|BudgetCheck
SCALE_ARGS ?= -scale.groups=10000 -scale.chats=100000 -scale.messages=10000000
bench:
	@mkdir -p bin
	go test -run '^$$' -bench '$(BENCH)' -benchmem ./... > bin/bench.out 2>&1 || { cat bin/bench.out; exit 1; }
	go test -run '^$$' -bench 'Scale|Overload' -benchtime 1x -timeout 30m ./cmd/switchboard/ -args $(SCALE_ARGS) >> bin/bench.out 2>&1 || { cat bin/bench.out; exit 1; }
	@grep -E '^(Benchmark|ok|FAIL|---)' bin/bench.out
	@echo
	@go run ./internal/benchtable < bin/bench.out

fuzz:
	go test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./grants
	go test -run '^$$' -fuzz FuzzMatch -fuzztime 30s ./grants

clean:
	rm -rf bin
