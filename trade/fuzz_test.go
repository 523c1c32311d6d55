package trade

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/fuzzdata"
	"github.com/gpufair/gpufair/topology"
)

// FuzzMarket opens a market on arbitrary counts, lets bidders with
// arbitrary rates join, trade and leave. It must never panic; holdings stay
// finite and non-negative (counts of 1e308 once ended holding +Inf), and no
// type is held beyond its count.
func FuzzMarket(f *testing.F) {
	f.Add([]byte{2, 16, 32, 2, 16, 48, 32, 16, 1})
	f.Add(append([]byte{1, 0}, fuzzdata.Bytes(1e308, 1e308)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzdata.New(data)
		nt := 1 + r.Int(3)
		types := make([]topology.GPUType, nt)
		for k := range types {
			types[k] = topology.GPUType(fmt.Sprint("t", k))
		}
		m, err := NewMarket(types, r.Floats(nt), nil)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var ids []alloc.TenantID
		for q := range 1 + r.Int(4) {
			id := alloc.TenantID(fmt.Sprint("u", q))
			rates := map[topology.GPUType]float64{}
			for _, typ := range types {
				rates[typ] = r.Number()
			}
			if _, err := m.Join(Bidder{Tenant: alloc.Tenant{ID: id, Weight: 1 + r.Number()}, Rates: rates}, q); err == nil {
				ids = append(ids, id)
			}
			m.Run(ctx, q)
			if len(ids) > 1 && r.Int(4) == 0 {
				m.Leave(ids[0], q)
				ids = ids[1:]
			}
		}
		// Holdings are finite and non-negative, and no type is held
		// beyond its count (counts of 1e308 once ended holding +Inf).
		held := make([]float64, nt)
		for _, id := range ids {
			h, _ := m.Holdings(id)
			for k, x := range h {
				if math.IsNaN(x) || math.IsInf(x, 0) || x < -1e-9*m.count[k] {
					t.Fatalf("%s holds %v of %s", id, x, types[k])
				}
				held[k] += x
			}
		}
		for k, x := range held {
			if x > m.count[k]*(1+1e-9) {
				t.Fatalf("%v of %s held, count %v", x, types[k], m.count[k])
			}
		}
	})
}
