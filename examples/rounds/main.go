// Command rounds walks through the two ways package stride turns a
// fractional allocation into whole GPUs, round after round.
//
// Part 1 is Gavel's round-based mechanism (OSDI'20, section 5): a policy's
// allocation says what fraction X_mk of the time job m should run on GPU
// type k. Before each round every (job, type) gets the priority X_mk / f_mk,
// where f_mk is the fraction of rounds the job has received there so far;
// the highest priorities run, gangs of several GPUs are placed on the
// fewest servers, and a job that stays on its type keeps its GPUs (a lease
// renewal, no checkpoint and restart). The received fractions converge to
// the targets: the program prints the largest gap after 10, 100 and 1,000
// rounds. (They converge when some schedule of whole rounds realises the
// targets; with gangs, fitting the GPUs on average is not always enough.)
//
// Part 2 is OEF's rounding placer (Middleware'24, section 4.3): each user
// has a fractional number of GPUs of each type; every round it gets the
// rounding of its share plus the deviation carried from earlier rounds,
// never fewer GPUs than its smallest job needs, and its larger jobs are
// placed first.
//
// Usage:
//
//	go run ./examples/rounds
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
		fmt.Fprintln(os.Stderr, "rounds:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	if err := gavel(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return oef(w)
}

// cluster is two servers of 4 V100s and one of 4 K80s.
func cluster() topology.Cluster {
	return topology.Cluster{Servers: []topology.Server{
		{Name: "v0", Type: "v100", GPUs: 4}, {Name: "v1", Type: "v100", GPUs: 4}, {Name: "k0", Type: "k80", GPUs: 4},
	}}
}

// describe prints a plan's assignments as job@type:servers.
func describe(p *stride.RoundPlan, servers []topology.Server) string {
	var s []string
	for _, a := range p.Assignments {
		used := map[int]bool{}
		var on []string
		for _, g := range a.GPUs {
			if !used[g.Server] {
				used[g.Server] = true
				on = append(on, servers[g.Server].Name)
			}
		}
		renewed := ""
		if a.Renewed {
			renewed = "*"
		}
		s = append(s, fmt.Sprintf("%s%s@%s", a.Row, renewed, strings.Join(on, "+")))
	}
	return strings.Join(s, " ")
}

// gavel realises a fractional allocation of 8 V100s and 4 K80s among five
// jobs with the round mechanism.
func gavel(w io.Writer) error {
	c := cluster()
	types := []topology.GPUType{"v100", "k80"}
	jobs := []alloc.Job{
		{ID: "a", Owner: "u", Gang: 1, Weight: 1},
		{ID: "b", Owner: "u", Gang: 1, Weight: 1},
		{ID: "c", Owner: "u", Gang: 2, Weight: 1},
		{ID: "d", Owner: "u", Gang: 4, Weight: 1},
		{ID: "e", Owner: "u", Gang: 4, Weight: 1},
	}
	// The allocation in alloc's convention: GPUs of each type averaged
	// over time, X_mk times the job's gang. Every type is fully used
	// (8 V100s, 4 K80s), as an optimal policy's allocation is.
	a := &alloc.Allocation{
		Rows:  []string{"a", "b", "c", "d", "e"},
		Types: types,
		GPUs: [][]float64{
			{0.5, 0.5}, // a: half the time on each type
			{0.5, 0.5}, // b: the same
			{1, 1},     // c: half the time on each type, 2 GPUs at once
			{2, 2},     // d: the same with 4 GPUs at once
			{4, 0},     // e: always on 4 V100s
		},
	}
	// FromAllocation turns GPUs into time fractions X = GPUs/gang, one
	// row per job, with columns in a.Types' order, the mechanism's order
	// here. (Rounds.SetAllocation does both steps and matches types by
	// name.)
	combos, err := stride.FromAllocation(jobs, a)
	if err != nil {
		return err
	}
	r, err := stride.NewRounds(c, types)
	if err != nil {
		return err
	}
	if err := r.Set(combos...); err != nil {
		return err
	}
	fmt.Fprintln(w, "Part 1: Gavel's round mechanism on 8 V100s (two servers) and 4 K80s")
	fmt.Fprintln(w, "targets X (fraction of the time on v100, k80):")
	for _, cb := range combos {
		fmt.Fprintf(w, "  %s (gang %d): %.3g\n", cb.ID, cb.Gang, cb.Target)
	}
	fmt.Fprintln(w, "first rounds (* = lease renewed, same GPUs as the round before):")
	renewals := 0
	for q := 1; q <= 1000; q++ {
		p, err := r.Round(q)
		if err != nil {
			return err
		}
		renewals += p.Renewals()
		if q <= 6 {
			fmt.Fprintf(w, "  round %d: %s\n", q, describe(p, c.Servers))
		}
		switch q {
		case 10, 100, 1000:
			fmt.Fprintf(w, "after %d rounds: largest |received - target| = %.3g\n", q, r.Distance())
		}
	}
	fmt.Fprintln(w, "received after 1000 rounds:")
	for _, cb := range combos {
		f, _ := r.Received(cb.ID)
		fmt.Fprintf(w, "  %s: %.3g\n", cb.ID, f)
	}
	fmt.Fprintf(w, "lease renewals: %d\n", renewals)
	return nil
}

// oef runs OEF's rounding placer for two users on the same cluster.
func oef(w io.Writer) error {
	c := cluster()
	types := []topology.GPUType{"v100", "k80"}
	r, err := stride.NewRounder(c, types, []stride.Tenant{
		{ID: "alice", Jobs: []alloc.Job{
			{ID: "a4", Gang: 4, Weight: 1}, {ID: "a1", Gang: 1, Weight: 1}, {ID: "a2", Gang: 1, Weight: 1}, {ID: "a3", Gang: 1, Weight: 1},
		}},
		{ID: "bob", Jobs: []alloc.Job{{ID: "b1", Gang: 2, Weight: 1}, {ID: "b2", Gang: 2, Weight: 1}, {ID: "b3", Gang: 2, Weight: 1}}},
	})
	if err != nil {
		return err
	}
	// Fractional GPUs per user and type, e.g. from an OEF allocation.
	ideal := [][]float64{{5.5, 1.25}, {2.5, 2.75}}
	fmt.Fprintln(w, "Part 2: OEF's rounding placer, ideal GPUs (v100, k80): alice", ideal[0], "bob", ideal[1])
	const rounds = 8
	total := [][]int{make([]int, 2), make([]int, 2)}
	for q := 1; q <= rounds; q++ {
		shares, plan, err := r.Round(q, ideal)
		if err != nil {
			return err
		}
		for i := range shares {
			for k := range shares[i] {
				total[i][k] += shares[i][k]
			}
		}
		fmt.Fprintf(w, "  round %d: alice %v bob %v, deviation alice %.3g bob %.3g; %s\n",
			q, shares[0], shares[1], r.Deviation(0), r.Deviation(1), describe(plan, c.Servers))
	}
	for i, u := range []string{"alice", "bob"} {
		fmt.Fprintf(w, "%s: %.3g GPUs per round on average, ideal %v\n", u,
			[]float64{float64(total[i][0]) / rounds, float64(total[i][1]) / rounds}, ideal[i])
	}
	return nil
}
