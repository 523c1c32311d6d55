// Command stride walks through Gandiva_fair's stride scheduling (EuroSys'20,
// section 3) with package stride, in two parts.
//
// Part 1 is gang-aware stride on one 4-GPU server (Algorithm 1, Table 2):
// three users with equal tickets run two 1-, 2- and 4-GPU jobs each. Every
// job advances its pass by gang/tickets when it runs; each quantum the jobs
// with the lowest passes run if their gang fits in the GPUs still free, and
// a job that does not fit keeps its pass, so it goes first next quantum.
//
// Part 2 is split stride on two 4-GPU servers (section 5.2): an 8-GPU job
// spans both servers and is scheduled centrally against one aggregate pass
// per server, while each server runs its own gang-aware stride for its
// small jobs. Users join a stride.Fair cluster as alloc.Tenant values whose
// Weight is their tickets, and submit jobs; Fair places each job on the servers of lowest ticket load (Algorithm 2).
//
// Usage:
//
//	go run ./examples/stride
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "stride:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	if err := oneServer(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return twoServers(w)
}

// oneServer reproduces Table 2: over six quanta the 1-, 2- and 4-GPU jobs
// get 66.7%, 33.3% and 16.7% of the time.
func oneServer(w io.Writer) error {
	s, err := stride.NewScheduler(4)
	if err != nil {
		return err
	}
	// Each user holds 100 tickets and two jobs of the same size r, so
	// equation (1) gives it 100/(2r) tickets per GPU and equation (3) gives
	// each job 100/(2r)·r = 50 tickets (its Weight), whatever its size.
	jobs := []alloc.Job{
		{ID: "A1", Gang: 1, Weight: 50}, {ID: "A2", Gang: 1, Weight: 50},
		{ID: "B1", Gang: 2, Weight: 50}, {ID: "B2", Gang: 2, Weight: 50},
		{ID: "C1", Gang: 4, Weight: 50}, {ID: "C2", Gang: 4, Weight: 50},
	}
	for _, j := range jobs {
		if err := s.Add(j); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "Part 1: gang-aware stride on one 4-GPU server (Table 2)")
	oneOfEach := []alloc.Job{jobs[0], jobs[2], jobs[4]} // a 1-, a 2- and a 4-GPU job
	fmt.Fprint(w, "strides (size/tickets):")
	for _, j := range oneOfEach {
		fmt.Fprintf(w, " %d-GPU %.2f", j.Gang, float64(j.Gang)/j.Weight)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "quantum  runs         passes after the quantum (A1 A2 B1 B2 C1 C2)")
	const quanta = 6
	runs := map[alloc.JobID]int{}
	for q := 1; q <= quanta; q++ {
		ran, err := s.Schedule(q)
		if err != nil {
			return err
		}
		var ids []string
		for _, j := range ran {
			ids = append(ids, string(j.ID))
			runs[j.ID]++
		}
		var passes []string
		for _, j := range jobs {
			p, _ := s.Pass(j.ID)
			passes = append(passes, fmt.Sprintf("%.2f", p))
		}
		fmt.Fprintf(w, "%7d  %-11s  %s\n", q, strings.Join(ids, " "), strings.Join(passes, " "))
	}
	fmt.Fprintln(w, "share of the time each job ran:")
	for _, j := range oneOfEach {
		fmt.Fprintf(w, "  %d-GPU job: %.1f%%\n", j.Gang, 100*float64(runs[j.ID])/quanta)
	}
	return nil
}

// twoServers reproduces section 5.2: three users of 100 tickets on two
// 4-GPU servers each get 8/3 GPUs (the paper's 2.66), and once the 8-GPU
// job finishes the other two get 4 GPUs each.
func twoServers(w io.Writer) error {
	f, err := stride.NewFair(topology.Cluster{Servers: []topology.Server{
		{Name: "s0", Type: "p100", GPUs: 4}, {Name: "s1", Type: "p100", GPUs: 4},
	}}, nil)
	if err != nil {
		return err
	}
	users := []alloc.TenantID{"user1", "user2", "user3"}
	sizes := map[alloc.TenantID][]int{"user1": {8}, "user2": {2, 2}, "user3": {1, 1, 1, 1}}
	fmt.Fprintln(w, "Part 2: split stride on two 4-GPU servers (section 5.2)")
	for _, u := range users {
		if err := f.AddTenant(alloc.Tenant{ID: u, Weight: 100}); err != nil {
			return err
		}
		for k, size := range sizes[u] {
			id := alloc.JobID(fmt.Sprintf("%s-%d", u, k))
			p, err := f.Submit(stride.Submission{ID: id, Owner: u, Gang: size})
			if err != nil {
				return err
			}
			var on []string
			for _, part := range p.Parts {
				on = append(on, fmt.Sprintf("s%d:%d", part.Server, part.GPUs))
			}
			fmt.Fprintf(w, "  %s, a %d-GPU job, placed on %s\n", id, size, strings.Join(on, " "))
		}
	}
	// Equation (2): tickets per GPU of each server after placement.
	fmt.Fprintf(w, "ticket load per GPU: %.1f\n", f.Loads())
	for _, a := range f.Accounts() {
		fmt.Fprintf(w, "  %s: fair share %.3g GPUs\n", a.Tenant, a.Share)
	}
	if err := quanta(w, f, users, 1, 12); err != nil {
		return err
	}
	fmt.Fprintln(w, "user1's 8-GPU job finishes:")
	if err := f.Finish("user1-0"); err != nil {
		return err
	}
	return quanta(w, f, users, 13, 12)
}

// quanta runs n quanta of f from quantum `from` and prints each user's
// GPU-quanta and its average GPUs.
func quanta(w io.Writer, f *stride.Fair, users []alloc.TenantID, from, n int) error {
	got := map[alloc.TenantID]int{}
	for q := from; q < from+n; q++ {
		plan, err := f.Quantum(q)
		if err != nil {
			return err
		}
		for _, r := range plan.Runs {
			u, _ := f.Owner(r.Job)
			got[u] += len(r.GPUs)
		}
	}
	fmt.Fprintf(w, "quanta %d to %d:\n", from, from+n-1)
	for _, u := range users {
		fmt.Fprintf(w, "  %s: %d GPU-quanta, %.3g GPUs on average\n", u, got[u], float64(got[u])/float64(n))
	}
	return nil
}
