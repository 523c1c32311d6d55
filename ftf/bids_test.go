package ftf

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

// TestTable2 rebuilds Themis' Table 2: a job with 200 s of serial work left,
// T_id = 400 s, offered the two GPUs of one server. [0,1] and [1,0] are one
// row (GPUs on a server are interchangeable): rho 200/400; both GPUs: 100/400.
func TestTable2(t *testing.T) {
	job := SingleJob{ItersLeft: 200, ItersTotal: 200, IterTime: 1, DemandMax: 2, ClusterGPUs: 2, Contention: 4}
	o := Offer{Cluster: topology.Cluster{Servers: []topology.Server{{Name: "m", Type: "k80", GPUs: 2}}}, Free: []int{2}}
	got, err := NewTable(o, nil, job.Rho, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := BidTable{RhoNone: math.Inf(1), Rows: []Row{{Counts: []int{2}, Rho: 0.25}, {Counts: []int{1}, Rho: 0.5}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewTable() mismatch (-want +got):\n%s", diff)
	}
}

func fourByFour() Offer {
	var c topology.Cluster
	for s := 0; s < 4; s++ {
		c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprintf("s%d", s), Rack: fmt.Sprintf("r%d", s/2), Type: "v100", GPUs: 4})
	}
	return Offer{Cluster: c, Free: []int{4, 4, 4, 4}}
}

func TestTableLocality(t *testing.T) {
	o := fourByFour()
	job := SingleJob{ItersLeft: 1000, ItersTotal: 1000, IterTime: 1, DemandMax: 16, ClusterGPUs: 16, Contention: 1}
	tab, err := NewTable(o, nil, job.Rho, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Validate(o, "job"); err != nil {
		t.Fatal(err)
	}
	// Best row: all 16 GPUs, across racks: 1000·1.3/16 / (1000/16).
	if got, want := tab.Rows[0].Rho, 1.3; math.Abs(got-want) > ratTol {
		t.Errorf("best rho = %v, want %v", got, want)
	}
	// 4 GPUs on one server beat 4 spread over a rack.
	var local, rack float64
	for _, r := range tab.Rows {
		if r.GPUs() != 4 {
			continue
		}
		loc, err := o.Cluster.LocalityOfCounts(r.Counts)
		if err != nil {
			t.Fatal(err)
		}
		switch loc {
		case topology.SameServer:
			local = r.Rho
		case topology.SameRack:
			rack = r.Rho
		}
	}
	if !(local > 0 && rack > local) {
		t.Errorf("4 GPUs: same-server rho %v, same-rack rho %v, want 0 < same-server < same-rack", local, rack)
	}
}

func TestBidTableValidate(t *testing.T) {
	o := fourByFour()
	ok := Row{Counts: []int{1, 0, 0, 0}, Rho: 1}
	for _, tc := range []struct {
		name string
		tab  BidTable
		want error
	}{
		{"rho zero", BidTable{RhoNone: 2, Rows: []Row{{Counts: []int{1, 0, 0, 0}, Rho: 0}}}, gpufair.ErrValue},
		{"rho negative", BidTable{RhoNone: 2, Rows: []Row{{Counts: []int{1, 0, 0, 0}, Rho: -1}}}, gpufair.ErrValue},
		{"rho NaN", BidTable{RhoNone: 2, Rows: []Row{{Counts: []int{1, 0, 0, 0}, Rho: math.NaN()}}}, gpufair.ErrValue},
		{"RhoNone NaN", BidTable{RhoNone: math.NaN(), Rows: []Row{ok}}, gpufair.ErrValue},
		// 1/rho, the auction's value (auction.TableOutcome.Value), was +Inf.
		{"rho whose reciprocal overflows", BidTable{RhoNone: 2, Rows: []Row{{Counts: []int{1, 0, 0, 0}, Rho: 5e-324}}}, gpufair.ErrValue},
		{"RhoNone whose reciprocal overflows", BidTable{RhoNone: 5e-324, Rows: []Row{ok}}, gpufair.ErrValue},
		{"rho of 1e-308", BidTable{RhoNone: 2, Rows: []Row{{Counts: []int{1, 0, 0, 0}, Rho: 1e-308}}}, nil},
		{"GPUs not offered", BidTable{RhoNone: 2, Rows: []Row{{Counts: []int{5, 0, 0, 0}, Rho: 1}}}, gpufair.ErrUnknownID},
		{"duplicate rows", BidTable{RhoNone: 2, Rows: []Row{ok, ok}}, gpufair.ErrDuplicate},
		{"short row", BidTable{RhoNone: 2, Rows: []Row{{Counts: []int{1}, Rho: 1}}}, gpufair.ErrShape},
		{"empty row", BidTable{RhoNone: 2, Rows: []Row{{Counts: []int{0, 0, 0, 0}, Rho: 1}}}, gpufair.ErrValue},
		{"valid", BidTable{RhoNone: math.Inf(1), Rows: []Row{ok}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.tab.Validate(o, "app")
			if !errors.Is(err, tc.want) {
				t.Fatalf("Validate() = %v, want %v", err, tc.want)
			}
			var ie *gpufair.InputError
			if err != nil && (!errors.As(err, &ie) || ie.ID != "app") {
				t.Errorf("Validate() = %#v, want an *gpufair.InputError naming the app", err)
			}
		})
	}
}

// TestNewTableProperties: any generated table is valid for its offer, sorted,
// within its bounds, and never worse than winning nothing.
func TestNewTableProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ns := rapid.IntRange(1, 6).Draw(t, "servers")
		var o Offer
		held := make([]int, ns)
		for s := 0; s < ns; s++ {
			slots := rapid.IntRange(1, 8).Draw(t, "slots")
			o.Cluster.Servers = append(o.Cluster.Servers, topology.Server{Name: fmt.Sprint(s), Rack: fmt.Sprint(rapid.IntRange(0, 2).Draw(t, "rack")), Type: "a", GPUs: slots})
			o.Free = append(o.Free, rapid.IntRange(0, slots).Draw(t, "free"))
			held[s] = rapid.IntRange(0, slots-o.Free[s]).Draw(t, "held")
		}
		job := SingleJob{ItersLeft: 100, ItersTotal: 100, IterTime: 1, DemandMax: rapid.IntRange(1, 20).Draw(t, "demand"), ClusterGPUs: 32, Contention: 2}
		set := &TableSettings{MaxRows: rapid.IntRange(0, 50).Draw(t, "maxRows"), PerShape: rapid.IntRange(0, 5).Draw(t, "perShape")}
		tab, err := NewTable(o, held, job.Rho, set)
		if err != nil {
			t.Fatal(err)
		}
		if err := tab.Validate(o, "x"); err != nil {
			t.Fatal(err)
		}
		if set.MaxRows > 0 && len(tab.Rows) > set.MaxRows {
			t.Fatalf("%d rows, MaxRows %d", len(tab.Rows), set.MaxRows)
		}
		for i, r := range tab.Rows {
			if r.Rho >= tab.RhoNone {
				t.Fatalf("row %d rho %v does not improve on RhoNone %v", i, r.Rho, tab.RhoNone)
			}
			if i > 0 && r.Rho < tab.Rows[i-1].Rho {
				t.Fatalf("rows not sorted by rho at %d", i)
			}
		}
		// An app holding nothing improves on RhoNone = +Inf with any GPU. One
		// already holding GPUs may not: rapid found 4 held on one server and
		// 1 offered in another rack, where 5 GPUs at 1.3 are slower than 4
		// at 1, so an empty table is right there.
		if o.Total() > 0 && sum(held) == 0 && len(tab.Rows) == 0 {
			t.Fatalf("no rows over an offer of %d GPUs", o.Total())
		}
	})
}

func BenchmarkNewTable16(b *testing.B) {
	o := fourByFour()
	app, info := table3App()
	rho := func(p Placement) (float64, error) { return RhoHalving(app, info, p, Literal) }
	tab, err := NewTable(o, nil, rho, nil)
	if err != nil || len(tab.Rows) == 0 {
		b.Fatal(err, len(tab.Rows))
	}
	for b.Loop() {
		tab, _ = NewTable(o, nil, rho, nil)
	}
	b.ReportMetric(float64(len(tab.Rows)), "rows")
}
