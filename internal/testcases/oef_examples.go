package testcases

// OEFExample is a worked example of OEF (Middleware'24, seeds/002), as plain
// data so that any package's tests can use it: rows are users, columns GPU
// types, and Alloc is the allocation the paper discusses, in GPUs, with the
// exact values its rounded figures come from (ERRATA.md: the printed
// efficiency vectors are computed from rounded allocations).
type OEFExample struct {
	Name   string
	Reason string // where it is in the paper and what it shows
	Types  []string
	Count  []float64 // GPUs per type
	Users  []string
	// Weights are the users' weights; nil means equal.
	Weights []float64
	// Speedups[i][k] is user i's speedup on type k (OEF's w_l^k, 1 on the
	// slowest type); the value of a bundle is Σ_k Speedups[i][k]·GPUs[k].
	Speedups [][]float64
	Alloc    [][]float64
	// Paper's verdicts on Alloc, where it states them.
	SharingIncentive bool
	EnvyFree         bool
	// Envier and Envied name a pair the paper says envies (−1 when none).
	Envier, Envied int
	// TotalEfficiency is Σ_i Σ_k Speedups[i][k]·Alloc[i][k], exact.
	TotalEfficiency float64
}

// oefSpeedups is the speedup matrix of expressions (1), (2), (3) and (5):
// three users on one slow and one fast GPU.
func oefSpeedups() [][]float64 { return [][]float64{{1, 2}, {1, 3}, {1, 4}} }

func oefThreeUsers(name, reason string, x [][]float64) OEFExample {
	return OEFExample{
		Name: name, Reason: reason,
		Types: []string{"GPU1", "GPU2"}, Count: []float64{1, 1},
		Users: []string{"u1", "u2", "u3"}, Speedups: oefSpeedups(), Alloc: x,
		Envier: -1, Envied: -1,
	}
}

// OEFGandivaFair is expression (1): Gandiva_fair's allocation after trading.
// From the equal split, u3 trades its slow share with u1 at price 3 (the
// second-highest speedup), then u2 trades with u1 at 2.5: x_1 = <1, 4/45>,
// x_2 = <0, 7/15>, x_3 = <0, 4/9> (printed 0.09, 0.47, 0.44), total 196/45.
// Sharing-incentive, not envy-free: u3 values u2's bundle at 28/15 > 16/9.
func OEFGandivaFair() OEFExample {
	e := oefThreeUsers("expression (1), Gandiva_fair", "OEF §2.4: SI but u3 envies u2",
		[][]float64{{1, 4.0 / 45}, {0, 7.0 / 15}, {0, 4.0 / 9}})
	e.SharingIncentive, e.EnvyFree, e.Envier, e.Envied = true, false, 2, 1
	e.TotalEfficiency = 196.0 / 45
	return e
}

// OEFStar is expression (2): X*, envy-free and sharing-incentive with total
// efficiency 4.5, above Gandiva_fair's 196/45. u1's sharing incentive and
// several envy constraints hold with equality.
func OEFStar() OEFExample {
	e := oefThreeUsers("expression (2), X*", "OEF §2.4: EF and SI, more efficient than (1)",
		[][]float64{{1, 0}, {0, 0.5}, {0, 0.5}})
	e.SharingIncentive, e.EnvyFree = true, true
	e.TotalEfficiency = 4.5
	return e
}

// OEFGavel is expression (3): Gavel's max-min allocation, which reproduces
// only with Gavel's per-job cap Σ_k x_ik ≤ 1 (ERRATA.md): x_1 = <10/11, 1/11>,
// x_2 = <1/11, 5/11>, x_3 = <0, 5/11>, efficiency 12/11 of the equal share
// for everyone, total 48/11 (above Gandiva_fair's 196/45, against the
// paper's rounded claim). u3 envies u2 (it values u2's bundle at 21/11,
// its own at 20/11). Pareto-efficient under the per-job cap, not without it
// (u1 and u2 can trade, as the paper says).
func OEFGavel() OEFExample {
	e := oefThreeUsers("expression (3), Gavel", "OEF §2.4: SI, u3 envies u2, not PE",
		[][]float64{{10.0 / 11, 1.0 / 11}, {1.0 / 11, 5.0 / 11}, {0, 5.0 / 11}})
	e.SharingIncentive, e.EnvyFree, e.Envier, e.Envied = true, false, 2, 1
	e.TotalEfficiency = 48.0 / 11
	return e
}

// OEFMaxEfficiency is expression (5): the maximum-efficiency allocation
// (the slow GPU to u1 here; it could go to u2 as well, ERRATA.md). Neither
// sharing-incentive (u2 gets nothing) nor envy-free (u1 and u2 prefer u3's
// bundle).
func OEFMaxEfficiency() OEFExample {
	e := oefThreeUsers("expression (5), maximum efficiency", "OEF §3.1.1: neither SI nor EF",
		[][]float64{{1, 0}, {0, 0}, {0, 1}})
	e.SharingIncentive, e.EnvyFree, e.Envier, e.Envied = false, false, 1, 2
	e.TotalEfficiency = 5
	return e
}

// OEFEnvyFreeTwoUsers is expression (6): two users, speedups <1, 2> and
// <1, 5>, and the most efficient envy-free allocation x_1 = <1, 1/4>,
// x_2 = <0, 3/4>, total 5.25. u1's envy constraint and sharing incentive
// hold with equality.
func OEFEnvyFreeTwoUsers() OEFExample {
	return OEFExample{
		Name: "expression (6), efficient envy-free", Reason: "OEF §3.1.1: EF and SI, total 5.25",
		Types: []string{"GPU1", "GPU2"}, Count: []float64{1, 1},
		Users: []string{"u1", "u2"}, Speedups: [][]float64{{1, 2}, {1, 5}},
		Alloc:            [][]float64{{1, 0.25}, {0, 0.75}},
		SharingIncentive: true, EnvyFree: true, Envier: -1, Envied: -1,
		TotalEfficiency: 5.25,
	}
}

// OEFExamples returns every example above, in the paper's order.
func OEFExamples() []OEFExample {
	return []OEFExample{OEFGandivaFair(), OEFStar(), OEFGavel(), OEFMaxEfficiency(), OEFEnvyFreeTwoUsers()}
}
