// Command trading walks through Gandiva_fair's second-price trading of GPU
// shares (EuroSys'20, section 3.4) with package trade, in three parts.
//
// Part 1 is Table 3: 60 K80s and 12 V100s shared equally by three users
// whose jobs run 1.25, 5 and 6.25 times faster on a V100 than on a K80.
// Every user starts with its fair share of each type (20 K80s and 4 V100s).
// For the pair (V100, K80), the user that gains most from a V100 (C) buys
// V100s from the user that gains least (A), paying in K80s at the
// second-highest speedup (B's 5 K80s per V100), so both gain and B keeps
// its share. Each trade is printed as a row of the paper's Figure 9.
//
// Part 2 is the mechanism's known weakness (OEF, Middleware'24, section
// 2.4): a user that reports a higher speedup than its true one (2.8 instead
// of 2) raises the price it is paid and ends up with a higher true
// throughput. Second-price trading is not strategy-proof.
//
// Part 3 shows what happens when a user arrives: the trades in force are
// undone (negative rates in the log) and trading starts again from the new
// fair shares.
//
// Usage:
//
//	go run ./examples/trading
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
	"github.com/gpufair/gpufair/trade"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "trading:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	for _, part := range []func(io.Writer) error{table3, inflation, arrival} {
		if err := part(w); err != nil {
			return err
		}
	}
	return nil
}

// market builds one user per entry of speedup, with one ticket each and
// rate 1 on slow and speedup[i] on fast, and joins them to a market of
// count slow and fast GPUs. unit is the most fast GPUs one trade moves (0:
// no limit).
func market(slow, fast topology.GPUType, count []float64, unit float64, ids []alloc.TenantID, speedup []float64) (*trade.Market, error) {
	m, err := trade.NewMarket([]topology.GPUType{slow, fast}, count, &trade.Settings{Unit: unit})
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		u := trade.Bidder{Tenant: alloc.Tenant{ID: id, Weight: 1}, Rates: map[topology.GPUType]float64{slow: 1, fast: speedup[i]}}
		if _, err := m.Join(u, 0); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// table3 reproduces Table 3 and Figure 9's log.
func table3(w io.Writer) error {
	ids := []alloc.TenantID{"A", "B", "C"}
	m, err := market("K80", "V100", []float64{60, 12}, 1, ids, []float64{1.25, 5, 6.25})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "Part 1: Table 3, 60 K80s and 12 V100s, V100 speedups A 1.25, B 5, C 6.25")
	printHoldings(w, m, ids, "fair share")
	trades, err := m.Run(context.Background(), 1)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "trades (bought/buyer sold/seller rate, as in Figure 9):")
	for _, t := range trades {
		fmt.Fprintln(w, " ", t)
	}
	printHoldings(w, m, ids, "after trading")
	return nil
}

// printHoldings prints each user's GPUs of each type and its throughput in
// slow-GPU units.
func printHoldings(w io.Writer, m *trade.Market, ids []alloc.TenantID, title string) {
	types := m.Types()
	fmt.Fprintf(w, "%s:\n", title)
	for _, id := range ids {
		h, _ := m.Holdings(id)
		v, _ := m.Value(id)
		fmt.Fprintf(w, "  %s: %.3g %s, %.3g %s, throughput %.3g\n", id, h[0], types[0], h[1], types[1], v)
	}
}

// inflation reproduces OEF section 2.4: one slow and one fast GPU, users
// with true speedups 2, 3 and 4; u1 gains by reporting 2.8.
func inflation(w io.Writer) error {
	fmt.Fprintln(w, "\nPart 2: OEF section 2.4, one slow and one fast GPU, speedups u1 2, u2 3, u3 4")
	ids := []alloc.TenantID{"u1", "u2", "u3"}
	for _, reported := range []float64{2, 2.8} {
		m, err := market("slow", "fast", []float64{1, 1}, 0, ids, []float64{reported, 3, 4})
		if err != nil {
			return err
		}
		trades, err := m.Run(context.Background(), 1)
		if err != nil {
			return err
		}
		h, _ := m.Holdings("u1")
		// u1's true speedup is 2, whatever it reported.
		fmt.Fprintf(w, "u1 reports %.2g: trades", reported)
		for _, t := range trades {
			fmt.Fprintf(w, " [%s]", t)
		}
		fmt.Fprintf(w, "; u1 holds %.3g slow, %.3g fast, true throughput %.3g\n", h[0], h[1], h[0]+2*h[1])
	}
	return nil
}

// arrival undoes Table 3's trades when a fourth user joins.
func arrival(w io.Writer) error {
	ids := []alloc.TenantID{"A", "B", "C"}
	m, err := market("K80", "V100", []float64{60, 12}, 1, ids, []float64{1.25, 5, 6.25})
	if err != nil {
		return err
	}
	if _, err := m.Run(context.Background(), 1); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nPart 3: D (V100 speedup 2) joins Table 3's market after its trades")
	undone, err := m.Join(trade.Bidder{Tenant: alloc.Tenant{ID: "D", Weight: 1}, Rates: map[topology.GPUType]float64{"K80": 1, "V100": 2}}, 2)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d trades undone, each logged with a negative rate, e.g. %s\n", len(undone), undone[0])
	ids = append(ids, "D")
	printHoldings(w, m, ids, "new fair share")
	trades, err := m.Run(context.Background(), 3)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d new trades\n", len(trades))
	printHoldings(w, m, ids, "after trading again")
	return nil
}
