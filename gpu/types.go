package gpu

import (
	"slices"
	"strings"
	"unicode"

	"github.com/gpufair/gpufair/topology"
)

// TypeRule maps product names that contain Match to the GPU type Type. Names
// and Match are compared as words: both are split at every character that is
// not a letter or digit, case is ignored, and the rule matches when Match's
// words occur consecutively among the name's. So "A100" matches
// "NVIDIA A100-SXM4-40GB" but "A40" does not match "NVIDIA RTX A4000".
type TypeRule struct {
	Match string
	Type  topology.GPUType
}

// TypeTable maps NVML product names to GPU types. Rules are tried in order
// and the first that matches wins, so a more specific rule must come before a
// less specific one ("A100 SXM4 80GB" before "A100"). A name that no rule matches maps to a type derived from the name
// itself (see Lookup).
//
// To tell apart variants that the default table merges, put a longer rule
// first:
//
//	t := append(gpu.TypeTable{{Match: "A100-SXM4-80GB", Type: "a100-80gb"}}, gpu.DefaultTypes()...)
type TypeTable []TypeRule

// DefaultTypes returns a new copy of the default table. It maps every NVIDIA
// data-centre GPU family since Kepler to its lower-case family name, ignoring
// form factor and memory size: "NVIDIA A100-SXM4-40GB" and
// "NVIDIA A100 80GB PCIe" are both "a100", "Tesla V100-SXM2-16GB" is "v100",
// "Tesla K80" is "k80" (Gavel's type names).
func DefaultTypes() TypeTable {
	return TypeTable{
		{"GB200", "gb200"},
		{"B200", "b200"},
		{"GH200", "gh200"},
		{"H200", "h200"},
		{"H100", "h100"},
		{"H800", "h800"},
		{"H20", "h20"},
		{"L40S", "l40s"},
		{"L40", "l40"},
		{"L4", "l4"},
		{"A100", "a100"},
		{"A800", "a800"},
		{"A40", "a40"},
		{"A30", "a30"},
		{"A16", "a16"},
		{"A10G", "a10g"},
		{"A10", "a10"},
		{"A2", "a2"},
		{"T4", "t4"},
		{"V100", "v100"},
		{"P100", "p100"},
		{"P40", "p40"},
		{"P4", "p4"},
		{"K80", "k80"},
		{"K40", "k40"},
	}
}

// Lookup returns the type of the first rule that matches name (see
// TypeRule); a rule with an empty Match or Type matches nothing, as a device
// without a type could not be scheduled. With no match it derives a type from the name: lower case,
// without a leading "nvidia " or "tesla ", spaces replaced by '-' (so
// "NVIDIA GeForce RTX 4090" becomes "geforce-rtx-4090"). An empty name gives
// "unknown".
func (t TypeTable) Lookup(name string) topology.GPUType {
	words := splitWords(name)
	for _, r := range t {
		if m := splitWords(r.Match); len(m) > 0 && r.Type != "" && containsRun(words, m) {
			return r.Type
		}
	}
	s := strings.ToLower(strings.TrimSpace(name))
	for _, p := range []string{"nvidia ", "tesla "} {
		s = strings.TrimPrefix(s, p)
	}
	s = strings.Join(strings.Fields(s), "-")
	if s == "" {
		return "unknown"
	}
	return topology.GPUType(s)
}

// splitWords returns the upper-cased runs of letters and digits in s.
func splitWords(s string) []string {
	return strings.FieldsFunc(strings.ToUpper(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// containsRun reports whether sub occurs as consecutive elements of words.
func containsRun(words, sub []string) bool {
	for i := 0; i+len(sub) <= len(words); i++ {
		if slices.Equal(words[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
