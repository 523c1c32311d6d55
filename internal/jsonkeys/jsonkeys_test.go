package jsonkeys

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		names    []string
		want     *KeyError // nil: no error
	}{
		{"distinct keys", `{"a": 1, "b": {"a": 2}}`, nil, nil},
		{"scalar", `3`, nil, nil},
		{"repeat at the top", `{"a": 1, "b": 2, "a": 3}`, nil, &KeyError{Key: "a", Other: "a"}},
		{"repeat in another case", `{"audit": true, "AUDIT": false}`, nil, &KeyError{Key: "AUDIT", Other: "audit"}},
		// encoding/json matches "ſ" (U+017F) to "s" and the Kelvin sign to "k".
		{"repeat in a Unicode fold", `{"slo": 1, "ſlo": 2}`, nil, &KeyError{Key: "ſlo", Other: "slo"}},
		{"repeat deep", `{"p": {"t": {"values": [[1]], "values": [[2]]}}}`, nil, &KeyError{Path: "p.t", Key: "values", Other: "values"}},
		{"repeat in an array", `{"jobs": [{"id": "a"}, {"id": "b", "Id": "c"}]}`, nil, &KeyError{Path: "jobs[1]", Key: "Id", Other: "id"}},
		{"repeat under an odd key", `{"v100": {"('A', 1)": {"null": 5, "null": 7}}}`, nil, &KeyError{Path: `v100["('A', 1)"]`, Key: "null", Other: "null"}},
		{"repeat under an empty key", `{"": {"x": 1, "x": 2}}`, nil, &KeyError{Path: `[""]`, Key: "x", Other: "x"}},
		{"same key in two objects", `[{"a": 1}, {"a": 2}]`, nil, nil},
		{"only the first value", `{"a": 1} {"a": 1, "a": 2}`, nil, nil},
		{"case variant of a name", `{"Problem": {}}`, []string{"problem"}, &KeyError{Key: "Problem", Other: "problem", Variant: true}},
		{"case variant deep", `{"problem": {"capacity": {"TYPES": []}}}`, []string{"problem", "capacity", "types"}, &KeyError{Path: "problem.capacity", Key: "TYPES", Other: "types", Variant: true}},
		{"exact names and unknown keys", `{"problem": 1, "Other": 2}`, []string{"problem"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.in), tc.names...)
			var got *KeyError
			if err != nil {
				var ok bool
				if got, ok = err.(*KeyError); !ok {
					t.Fatalf("Check() error = %v, want a *KeyError", err)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Check() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckRepeats(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     *KeyError // nil: no error
	}{
		{"distinct keys", `{"a": 1, "b": {"a": 2}}`, nil},
		{"keys in two cases are distinct", `{"a": 1, "A": 2}`, nil},
		{"repeat at the top", `{"a": 1, "b": 2, "a": 3}`, &KeyError{Key: "a", Other: "a"}},
		{"repeat in a map in a list", `{"jobs": [{"x": 1}, {"y": 1, "y": 2}]}`, &KeyError{Path: "jobs[1]", Key: "y", Other: "y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckRepeats([]byte(tc.in))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("CheckRepeats() = %v, want nil", err)
				}
				return
			}
			got, ok := err.(*KeyError)
			if !ok {
				t.Fatalf("CheckRepeats() = %v, want %+v", err, tc.want)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CheckRepeats() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckInvalid(t *testing.T) {
	for _, in := range []string{``, `{"a": `, `{"a" 1}`} {
		if err := Check([]byte(in)); err == nil {
			t.Errorf("Check(%q) = nil, want encoding/json's error", in)
		}
	}
}

func TestKeyErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		err  *KeyError
		want string
	}{
		{&KeyError{Key: "a", Other: "a"}, `key "a" listed twice`},
		{&KeyError{Path: "p.t", Key: "A", Other: "a"}, `p.t: key "A" listed twice (as "a")`},
		{&KeyError{Path: "p", Key: "A", Other: "a", Variant: true}, `p: key "A" is not "a" (keys must match in case)`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// TestFoldMatchesEncodingJSON checks Fold against encoding/json itself: a
// key fills the field named "sk" exactly when it folds as "sk" does.
func TestFoldMatchesEncodingJSON(t *testing.T) {
	for _, key := range []string{"sk", "SK", "Sk", "ſk", "sK", "SK", "ſK", "s", "skk", "σk", "ßk", "sk "} {
		var v struct {
			F int `json:"sk"`
		}
		b, _ := json.Marshal(map[string]int{key: 1})
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		if got, want := Fold(key) == Fold("sk"), v.F == 1; got != want {
			t.Errorf("Fold(%q) == Fold(\"sk\") is %v, encoding/json matched it: %v", key, got, want)
		}
	}
}
