# gpufair: two entry points.
#   make demo   runs the main demonstration (examples/quickstart)
#   make test   runs the whole test suite, with CLP (cgo) and again pure Go
#   make reproduce  runs every paper's evaluation in full (docs/reproduction.md; long)
GO ?= go
export PATH := $(PATH):/usr/local/go/bin

.PHONY: demo test deps lint bench fuzz reproduce

deps:
	@sh scripts/deps.sh

demo: deps
	$(GO) run ./examples/quickstart

lint: deps
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) vet ./...

test: lint
	$(GO) test -count=1 ./...
	CGO_ENABLED=0 $(GO) test -count=1 ./...

bench: deps
	$(GO) test -run='^$$' -bench=. -benchtime=3x ./...

# Each paper's evaluation has its own target, reproduce-<paper>, defined
# below and listed here.
reproduce: deps
