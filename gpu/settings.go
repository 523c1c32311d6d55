package gpu

import "os"

// Settings adjust a probe. A nil *Settings, or the zero value, means: name the
// host after os.Hostname, no rack, and map product names with DefaultTypes.
type Settings struct {
	Name  string    // host name; empty means os.Hostname(), or "localhost" if that fails
	Rack  string    // rack of the host's servers
	Types TypeTable // product name to GPU type; nil means DefaultTypes()
}

func (s *Settings) withDefaults() Settings {
	var out Settings
	if s != nil {
		out = *s
	}
	if out.Name == "" {
		if h, err := os.Hostname(); err == nil && h != "" {
			out.Name = h
		} else {
			out.Name = "localhost"
		}
	}
	if out.Types == nil {
		out.Types = DefaultTypes()
	}
	return out
}
