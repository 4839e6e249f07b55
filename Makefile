# Every go command run from here builds go-sqlite3 with FTS5.
export GOFLAGS := -tags=sqlite_fts5
export CGO_ENABLED := 1

BIN := bin/switchboard
CONFIG ?= config.example.yaml

.PHONY: run build test lint bench fuzz clean

run: build
	./$(BIN) --config $(CONFIG) run

build:
	go build -o $(BIN) ./cmd/switchboard

test:
	go vet ./...
	go test -race -timeout 12m ./...

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
