package main

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// inJSON rewrites the *gpufair.InputError values in err, which name Go
// fields of alloc.Problem ("Jobs.Weight", ID "job1") or of a policy
// ("FIFO.Arrival"), to name the request's JSON path instead
// ("problem.jobs[1].weight"). An error it cannot place is left as it is.
func inJSON(p *alloc.Problem, err error) error {
	if errs, ok := err.(interface{ Unwrap() []error }); ok { // errors.Join
		var out []error
		for _, e := range errs.Unwrap() {
			out = append(out, inJSON(p, e))
		}
		return errors.Join(out...)
	}
	var ie *gpufair.InputError
	if !errors.As(err, &ie) {
		return err
	}
	path := jsonPath(p, ie.Field, ie.ID)
	if path == "" {
		return err
	}
	if ie.ID != "" {
		path += fmt.Sprintf(" (%q)", ie.ID)
	}
	if w, ok := weightOf(p, ie.Field, ie.ID); ok && errors.Is(err, gpufair.ErrValue) {
		what := fmt.Sprint(w)
		if w == 0 {
			what = "missing or 0"
		}
		return fmt.Errorf("%s: %w: weight %s, want one in [%g, %g] (alloc.MinWeight, alloc.MaxWeight)", path, gpufair.ErrValue, what, alloc.MinWeight, alloc.MaxWeight)
	}
	return fmt.Errorf("%s: %w", path, ie.Err)
}

// jsonPath returns the JSON path of the input alloc names by field and id,
// or "" if it has none.
func jsonPath(p *alloc.Problem, field, id string) string {
	parent, goName, _ := strings.Cut(field, ".")
	name := strings.ToLower(goName) // alloc's JSON names are its Go field names in lower case
	switch parent {
	case "Capacity":
		return indexed("problem.capacity."+name, p.Capacity.Types, topology.GPUType(id))
	case "Jobs":
		return element("problem.jobs", p.JobIDs(), id, name)
	case "Tenants":
		ids := make([]alloc.TenantID, len(p.Tenants))
		for i, t := range p.Tenants {
			ids[i] = t.ID
		}
		return element("problem.tenants", ids, alloc.TenantID(id), name)
	case "Throughputs":
		if name != "" {
			return ""
		}
		if id == "" || p.Throughputs == nil {
			return "problem.throughputs"
		}
		if i := slices.Index(p.Throughputs.Rows(), id); i >= 0 {
			return fmt.Sprintf("problem.throughputs.values[%d]", i)
		}
		return indexed("problem.throughputs.types", p.Throughputs.Types(), topology.GPUType(id))
	}
	// A policy's input, such as FIFO.Arrival: a field of inputs.
	f, ok := reflect.TypeFor[inputs]().FieldByName(goName)
	if !ok || goName == "" {
		return ""
	}
	tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if f.Name == "Cost" {
		return indexed("inputs."+tag, p.Capacity.Types, topology.GPUType(id))
	}
	return indexed("inputs."+tag, p.JobIDs(), id)
}

// indexed returns path[i] for the first ids[i] equal to id, or path if
// there is none.
func indexed[T comparable](path string, ids []T, id T) string {
	if i := slices.Index(ids, id); i >= 0 {
		return fmt.Sprintf("%s[%d]", path, i)
	}
	return path
}

// element returns path[i].name for the first ids[i] equal to id, or
// path.name if there is none (path if name is empty).
func element[T comparable](path string, ids []T, id T, name string) string {
	path = indexed(path, ids, id)
	if name == "" {
		return path
	}
	return path + "." + name
}

// weightOf returns the weight of the job or tenant id, if field is
// "Jobs.Weight" or "Tenants.Weight".
func weightOf(p *alloc.Problem, field, id string) (float64, bool) {
	switch field {
	case "Jobs.Weight":
		if i := slices.Index(p.JobIDs(), id); i >= 0 {
			return p.Jobs[i].Weight, true
		}
	case "Tenants.Weight":
		if i := slices.IndexFunc(p.Tenants, func(t alloc.Tenant) bool { return string(t.ID) == id }); i >= 0 {
			return p.Tenants[i].Weight, true
		}
	}
	return 0, false
}
