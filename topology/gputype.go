package topology

// GPUType names a kind of accelerator, such as "k80", "p100" or "v100".
// Types are compared by name; the library never interprets the name except
// where a caller maps product names to types (package gpu).
type GPUType string
