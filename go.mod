module github.com/gpufair/gpufair

go 1.24.0

require (
	github.com/NVIDIA/go-nvml v0.13.0-1
	github.com/google/go-cmp v0.7.0
	github.com/lanl/clp v1.2.0
	gonum.org/v1/gonum v0.17.0
	pgregory.net/rapid v1.3.0
)

require github.com/google/uuid v1.6.0 // indirect
