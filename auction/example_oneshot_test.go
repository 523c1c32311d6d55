package auction_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/auction"
	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/topology"
)

// Divisible goods: bidder b0 values only type t0, b1 both types alike. At the
// proportionally fair allocation b0 buys t0 and b1 buys t1; without b0, b1
// would have had both (value 2), so b0 keeps c = 1/2 and pays the rest.
func ExamplePartialAllocation() {
	c, _ := alloc.NewCapacity([]topology.GPUType{"t0", "t1"}, []float64{1, 1})
	out, err := auction.PartialAllocation(context.Background(), c, []string{"b0", "b1"}, []alloc.Valuation{alloc.Linear{1, 0}, alloc.Linear{1, 1}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, id := range []string{"b0", "b1"} {
		fmt.Printf("%s: c = %.3g, final %.3g\n", id, out.Keep[i], out.Final.GPUs[i])
	}
	fmt.Printf("leftover %.3g\n", out.Leftover)
	// Output:
	// b0: c = 0.5, final [0.5 0]
	// b1: c = 1, final [0 1]
	// leftover [0.5 0]
}

// Bid tables over indivisible GPUs: two apps already running elsewhere bid
// for one 4-GPU server. The product of 1/rho is largest with 3 GPUs for a
// and 1 for b (product 1·1/0.6, ahead of 2 GPUs each at 0.75·2); each keeps
// c_i of its row: a keeps (1/0.6)/3, what b's value is with a over what it
// would be without.
func ExampleAuctionTables() {
	o := ftf.Offer{Cluster: topology.Cluster{Servers: []topology.Server{{Name: "m0", Type: "v100", GPUs: 4}}}, Free: []int{4}}
	a := ftf.BidTable{RhoNone: 4, Rows: []ftf.Row{{Counts: []int{4}, Rho: 0.8}, {Counts: []int{3}, Rho: 1}, {Counts: []int{2}, Rho: 4.0 / 3}, {Counts: []int{1}, Rho: 2}}}
	b := ftf.BidTable{RhoNone: 1, Rows: []ftf.Row{{Counts: []int{4}, Rho: 1.0 / 3}, {Counts: []int{3}, Rho: 0.4}, {Counts: []int{2}, Rho: 0.5}, {Counts: []int{1}, Rho: 0.6}}}
	out, err := auction.AuctionTables(context.Background(), o, []auction.Bid{{App: "a", Table: a}, {App: "b", Table: b}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, t := range []ftf.BidTable{a, b} {
		fmt.Printf("%s: %d GPUs, rho %.3g, c = %.3g\n", string(rune('a'+i)), t.Rows[out.Row[i]].GPUs(), t.Rows[out.Row[i]].Rho, out.Keep[i])
	}
	// Output:
	// a: 3 GPUs, rho 1, c = 0.556
	// b: 1 GPUs, rho 0.6, c = 0.8
}
