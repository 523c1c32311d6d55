package stride_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// A scheduler's loop around Gavel's mechanism: events in, one leased
// decision per round out.
func ExampleGavel() {
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "k80-0", Type: "k80", GPUs: 2},
		{Name: "v100-0", Type: "v100", GPUs: 2},
	}}
	types := []topology.GPUType{"k80", "v100"}
	s, err := stride.NewGavel(alloc.MaxMin{}, c, types, &stride.GavelSettings{Round: 360})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	err = s.Apply(
		round.Arrive(0, alloc.Job{ID: "resnet", Gang: 1, Weight: 1, Rates: []float64{1, 4}}, 0),
		round.Arrive(0, alloc.Job{ID: "lstm", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 0),
		round.Arrive(0, alloc.Job{ID: "gan", Gang: 2, Weight: 1, Rates: []float64{1, 3}}, 0),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	for now := 0.0; now < 3*360; now += 360 {
		d, err := s.Decide(ctx, now)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("round %d:", d.Round)
		for _, p := range d.Placements {
			fmt.Printf(" %s on %d %s (renewed %v)", p.Jobs[0], len(p.GPUs), p.Type, p.Renewed)
		}
		fmt.Println()
	}
	x, _ := s.Target("gan")
	fmt.Printf("gan's allocation: %.3g of the time on k80, %.3g on v100\n", x[0], x[1])
	// Output:
	// round 0: gan on 2 k80 (renewed false) lstm on 1 v100 (renewed false) resnet on 1 v100 (renewed false)
	// round 1: gan on 2 v100 (renewed false) lstm on 1 k80 (renewed false) resnet on 1 k80 (renewed false)
	// round 2: gan on 2 k80 (renewed false) lstm on 1 v100 (renewed false) resnet on 1 v100 (renewed false)
	// gan's allocation: 0.85 of the time on k80, 0.15 on v100
}

// With GavelSettings.ResetInterval, f_mk counts from the latest re-solve of
// the policy, as Gavel's paper has it: job a, which ran alone for an hour,
// takes turns with b from b's arrival on, instead of waiting until its share
// since its own arrival falls to its allocation, 0.5.
func ExampleGavel_Fraction() {
	c := topology.Cluster{Servers: []topology.Server{{Name: "v100-0", Type: "v100", GPUs: 1}}}
	types := []topology.GPUType{"v100"}
	s, err := stride.NewGavel(alloc.MaxMin{}, c, types, &stride.GavelSettings{ResetInterval: stride.GavelResetInterval})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for now := 0.0; now < 14*360; now += 360 {
		var ev []round.Event
		switch now {
		case 0:
			ev = append(ev, round.Arrive(now, alloc.Job{ID: "a", Gang: 1, Weight: 1, Rates: []float64{1}}, 0))
		case 3600:
			ev = append(ev, round.Arrive(now, alloc.Job{ID: "b", Gang: 1, Weight: 1, Rates: []float64{1}}, 0))
		}
		if err := s.Apply(ev...); err != nil {
			fmt.Println(err)
			return
		}
		d, err := s.Decide(ctx, now)
		if err != nil {
			fmt.Println(err)
			return
		}
		if now >= 3600 {
			a, _ := s.Ledger().Job("a")
			fmt.Printf("%4.0f s: %s runs; f_a %.3g (since arrival %.3g), f_b %.3g\n",
				now, d.Placements[0].Jobs[0], s.Fraction("a", 0, now), a.Fraction(0, now), s.Fraction("b", 0, now))
		}
	}
	// Output:
	// 3600 s: a runs; f_a 0 (since arrival 1), f_b 0
	// 3960 s: b runs; f_a 1 (since arrival 1), f_b 0
	// 4320 s: a runs; f_a 0.5 (since arrival 0.917), f_b 0.5
	// 4680 s: b runs; f_a 0.667 (since arrival 0.923), f_b 0.333
}
