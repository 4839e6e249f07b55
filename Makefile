# Every go command run from here builds go-sqlite3 with FTS5.
export GOFLAGS := -tags=sqlite_fts5
export CGO_ENABLED := 1

BIN := bin/switchboard
CONFIG ?= config.example.yaml

.PHONY: run build test deps lint bench fuzz clean

run: build
	./$(BIN) --config $(CONFIG) run

build:
	go build -o $(BIN) ./cmd/switchboard

test: deps
	go vet ./...
	go test -race -timeout 12m ./...

# deps makes sure of what the tests need on a fresh machine, so that no test
# of the agent sandbox skips: bubblewrap (installed when running as root).
deps:
	@command -v bwrap >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then \
			echo "installing bubblewrap (the agent sandbox)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
		else \
			echo "bubblewrap is missing; the sandbox tests need it: sudo apt-get install bubblewrap" >&2; exit 1; \
		fi; }

lint:
	gofmt -l . | tee /dev/stderr | (! read)
	go vet ./...

bench:
	go test -run '^$$' -bench . -benchmem ./...

fuzz:
	go test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./grants
	go test -run '^$$' -fuzz FuzzMatch -fuzztime 30s ./grants

clean:
	rm -rf bin
