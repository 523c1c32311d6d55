package lp_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/lp"
)

// A caller that knows its family of LPs may choose the pure-Go dual
// simplex's pricing: steepest edge takes about half of Devex's iterations
// on cooperative OEF's cold LPs, and several times as many on Gavel's
// max-min LP, so Devex is the default. Both reach the same optimum.
func ExampleSettings_dualPricing() {
	m := lp.NewModel(lp.Maximize)
	x := m.AddVar("x", 0, lp.Inf, 3)
	y := m.AddVar("y", 0, lp.Inf, 2)
	m.AddConstraint("gpus", []lp.Term{{Var: x, Coef: 1}, {Var: y, Coef: 1}}, lp.LE, 4)
	m.AddConstraint("memory", []lp.Term{{Var: x, Coef: 1}, {Var: y, Coef: 3}}, lp.LE, 6)
	m.AddConstraint("floor", []lp.Term{{Var: y, Coef: 1}}, lp.GE, 1)
	for _, pricing := range []lp.DualPricing{lp.DevexPricing, lp.SteepestEdgePricing} {
		sol, err := lp.Solve(context.Background(), m, &lp.Settings{Backend: lp.PureGo, DualPricing: pricing})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%v: %v, x = %.0f, y = %.0f\n", pricing, sol.Status, sol.X[x], sol.X[y])
	}
	// Output:
	// DevexPricing: Optimal, x = 3, y = 1
	// SteepestEdgePricing: Optimal, x = 3, y = 1
}

// Lexicographic LPs on one loaded model: the most work that two jobs
// sharing 4 GPUs can do (x and y GPUs, job a at most 3), then, that total
// held by a bound, as much of it as possible for job b. The second solve
// goes on from the first's optimum.
func ExampleIncremental_SetObjective() {
	m := lp.NewModel(lp.Maximize)
	x := m.AddVar("a", 0, 3, 1)
	y := m.AddVar("b", 0, lp.Inf, 1)
	gpus := []lp.Term{{Var: x, Coef: 1}, {Var: y, Coef: 1}}
	m.AddConstraint("gpus", gpus, lp.LE, 4)
	in, err := lp.NewIncremental(m, nil)
	if err != nil {
		panic(err)
	}
	defer in.Close()
	sol, err := in.Solve(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Printf("total %.0f\n", sol.Objective)
	in.AddConstraint("held total", gpus, lp.GE, sol.Objective)
	in.SetObjective(x, 0)
	sol, err = in.Solve(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Printf("b %.0f, a %.0f\n", sol.Value(y), sol.Value(x))
	// Output:
	// total 4
	// b 4, a 0
}
