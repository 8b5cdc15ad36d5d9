# hostprov: the commands a developer and CI use. `make test` is what CI runs.
GO ?= go
BIN ?= bin/hostprov
# How long `make fuzz` runs each fuzz target.
FUZZTIME ?= 30s

.PHONY: build test bench lint fuzz golden clean

build:
	$(GO) build -o $(BIN) ./cmd/hostprov

# The whole suite. Tests that need root or a real tool skip on a laptop
# and must run (and fail if they cannot) when CI=true.
test: lint
	$(GO) test -count=1 ./...

# Speed and memory, as Go benchmarks (never as timed assertions in tests).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# Regenerate the golden files; review the diff before committing.
golden:
	$(GO) test ./... -update

clean:
	rm -rf bin
