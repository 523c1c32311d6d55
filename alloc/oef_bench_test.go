package alloc_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/lp"
)

// oefBenchProblem draws users×types with one job per user, as LP-NOTES.md's
// instances: a lognormal base throughput, speedups 1 to 10 over the slowest
// type (type 0), weights 1 or 2, about one GPU per two users. With jobTypes
// > 0 the users draw their rows from that many job types (so they share
// rows); 0 means all rows distinct.
func oefBenchProblem(b *testing.B, users, types, jobTypes int, seed uint64) *alloc.Problem {
	r := rand.New(rand.NewPCG(seed, 1))
	row := func() []float64 {
		base := math.Exp(r.NormFloat64())
		x := make([]float64, types)
		x[0] = base
		for k := 1; k < types; k++ {
			x[k] = base * (1 + 9*r.Float64())
		}
		return x
	}
	var pool [][]float64
	for range jobTypes {
		pool = append(pool, row())
	}
	rates := make([][]float64, users)
	weights := make([]float64, users)
	for i := range rates {
		if jobTypes > 0 {
			rates[i] = pool[r.IntN(jobTypes)]
		} else {
			rates[i] = row()
		}
		weights[i] = float64(1 + r.IntN(2))
	}
	count := make([]float64, types)
	for k := range count {
		count[k] = math.Max(1, math.Round(float64(users)/2/float64(types)*(0.5+r.Float64())))
	}
	return oefUsersProblem(b, count, weights, rates)
}

// cpuTime returns the process's CPU time, user and system: on a shared
// machine it varies far less with the load than wall time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchOEF(b *testing.B, mode alloc.OEFMode, method alloc.OEFMethod, users, types, jobTypes int) {
	b.Run(fmt.Sprintf("users=%d/types=%d/jobtypes=%d/%v", users, types, jobTypes, method), func(b *testing.B) {
		p := oefBenchProblem(b, users, types, jobTypes, 1)
		pol := alloc.OEF{Mode: mode, Settings: &alloc.OEFSettings{Method: method}}
		if _, err := pol.Allocate(context.Background(), p); err != nil {
			b.Fatal(err)
		}
		cpu := cpuTime()
		for b.Loop() {
			if _, err := pol.Allocate(context.Background(), p); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((cpuTime()-cpu).Seconds()*1e3/float64(b.N), "cpu-ms/op")
	})
}

func BenchmarkOEFNonCooperative(b *testing.B) {
	for _, sz := range [][2]int{{256, 3}, {1024, 10}, {4096, 10}} {
		for _, method := range oefMethods {
			benchOEF(b, alloc.NonCooperative, method, sz[0], sz[1], 0)
		}
	}
}

// BenchmarkOEFCooperative compares envy-row generation with the full model
// on distinct rows (the full model only up to 256 users: 1,024 users
// have a million envy rows), measures envy-row generation alone at 512 and
// 1,024 users × 3 types (1,024 × 10 with distinct rows does not finish in
// a minute), compares them at 2 types (where neighbour rows suffice), and
// shows the scale reached when users share job types
// (classes), where the full model is out of reach.
func BenchmarkOEFCooperative(b *testing.B) {
	for _, users := range []int{64, 128, 256} {
		for _, method := range oefMethods {
			benchOEF(b, alloc.Cooperative, method, users, 3, 0)
		}
	}
	for _, method := range oefMethods {
		benchOEF(b, alloc.Cooperative, method, 256, 2, 0)
	}
	benchOEF(b, alloc.Cooperative, alloc.OEFStructured, 1024, 2, 0)
	benchOEF(b, alloc.Cooperative, alloc.OEFStructured, 512, 3, 0)
	benchOEF(b, alloc.Cooperative, alloc.OEFStructured, 1024, 3, 0)
	benchOEF(b, alloc.Cooperative, alloc.OEFStructured, 1024, 10, 26)
	benchOEF(b, alloc.Cooperative, alloc.OEFStructured, 4096, 10, 26)
}

// oefNoisyProblem draws the workload of stride's BenchmarkGavelDecide for
// OEF: jobs of 20 job types whose rates carry 2% noise on every rate, so
// that every row is distinct, owned by 50 users in turn, on 160 GPUs of
// the slowest type and 280 of each of three faster ones.
func oefNoisyProblem(b *testing.B, jobs int, seed uint64) *alloc.Problem {
	return oefProblem(b, []float64{160, 280, 280, 280}, nil, oefNoisyJobs(jobs, seed))
}

// oefNoisyJobs returns the jobs of oefNoisyProblem, named j1, j2, … so
// that a longer list extends a shorter one of the same seed.
func oefNoisyJobs(jobs int, seed uint64) []oefJob {
	rng := rand.New(rand.NewPCG(seed, 13))
	base := make([][]float64, 20)
	for m := range base {
		r := 1 + rng.Float64()
		base[m] = []float64{r, r * (1.5 + rng.Float64()), r * (2 + 2*rng.Float64()), r * (3 + 3*rng.Float64())}
	}
	js := make([]oefJob, jobs)
	for i := range js {
		rates := make([]float64, 4)
		for k, r := range base[rng.IntN(len(base))] {
			rates[k] = r * (1 + 0.02*(2*rng.Float64()-1))
		}
		js[i] = oefJob{owner: i % 50, rates: rates, id: alloc.JobID(fmt.Sprintf("j%d", i+1))}
	}
	return js
}

// BenchmarkOEFWarmRows times exact cooperative OEF on the noisy 2,000 jobs
// seeded with the binding rows of the solve before (OEFSettings.WarmRows),
// as a scheduler re-solves: the same jobs; 1% or 5% of them with their
// rates measured again (each rate moved by up to 2%); 20 arrived, 20
// departed, or both; each with the rows alone, and with the basis as well
// (OEFSettings.WarmBasis). "cold" is the solve without either, whose rows
// and basis seed the others. Each run reports its certificate.
func BenchmarkOEFWarmRows(b *testing.B) {
	all := oefNoisyJobs(2020, 1)
	counts := []float64{160, 280, 280, 280}
	base := oefProblem(b, counts, nil, all[:2000])
	remeasured := func(frac float64) []oefJob {
		rng := rand.New(rand.NewPCG(2, 17))
		js := slices.Clone(all[:2000])
		for i := range js {
			if rng.Float64() < frac {
				rates := slices.Clone(js[i].rates)
				for k := range rates {
					rates[k] *= 1 + 0.02*(2*rng.Float64()-1)
				}
				js[i].rates = rates
			}
		}
		return js
	}
	// The departing jobs belong to owners with other jobs, so that the
	// users stay the same.
	churn := append(slices.Clone(all[20:2000]), all[2000:]...)
	_, first, err := alloc.OEF{Mode: alloc.Cooperative}.AllocateCertified(context.Background(), base)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		p    *alloc.Problem
		warm bool
	}{
		{"cold", base, false},
		{"same", base, true},
		{"remeasured=1%", oefProblem(b, counts, nil, remeasured(0.01)), true},
		{"remeasured=5%", oefProblem(b, counts, nil, remeasured(0.05)), true},
		{"churn=20", oefProblem(b, counts, nil, churn), true},
		{"arrived=20", oefProblem(b, counts, nil, all), true},
		{"departed=20", oefProblem(b, counts, nil, all[20:2000]), true},
	} {
		for _, set := range []struct {
			name string
			set  alloc.OEFSettings
		}{
			{"rows", alloc.OEFSettings{WarmRows: first.Binding}},
			{"rows+basis", alloc.OEFSettings{WarmRows: first.Binding, WarmBasis: first.Basis}},
		} {
			name := tc.name + "/" + set.name
			if !tc.warm {
				if set.name != "rows" {
					continue
				}
				name, set.set = tc.name, alloc.OEFSettings{}
			}
			b.Run(name, func(b *testing.B) {
				pol := alloc.OEF{Mode: alloc.Cooperative, Settings: &set.set}
				var cert alloc.OEFCertificate
				for b.Loop() {
					if _, cert, err = pol.AllocateCertified(context.Background(), tc.p); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(max(cert.Envy, 0), "envy")
				b.ReportMetric(max(cert.Gap(), 0), "gap")
				b.ReportMetric(cert.Throughput, "throughput")
			})
		}
	}
}

// BenchmarkOEFCooperativeScale times cooperative OEF where every row is
// distinct, at the sizes of docs/benchmarks/oef.md's targets, with the
// full model where it fits (256 users), and EnvyTolerance beside the exact
// method; the noisy jobs with a user each, and 2,048 users × 4 types, are
// instances whose weights the LP's scale (alloc's oef_scale.go) changes
// most. Each run reports its certificate: the envy (relative) and the
// duality gap (relative; 0 where not certified).
func BenchmarkOEFCooperativeScale(b *testing.B) {
	type instance struct {
		name string
		p    func(b *testing.B) *alloc.Problem
	}
	distinct := func(users, types int) instance {
		return instance{fmt.Sprintf("users=%d/types=%d/distinct", users, types), func(b *testing.B) *alloc.Problem {
			return oefBenchProblem(b, users, types, 0, 1)
		}}
	}
	noisy := instance{"jobs=2000/jobtypes=20/noise=2%", func(b *testing.B) *alloc.Problem { return oefNoisyProblem(b, 2000, 1) }}
	// The same jobs, each its own user's: every virtual user weighs 1
	// instead of 1/40 (see alloc's oef_scale.go).
	noisyOwners := instance{"jobs=2000/jobtypes=20/noise=2%/a-user-each", func(b *testing.B) *alloc.Problem {
		js := oefNoisyJobs(2000, 1)
		for i := range js {
			js[i].owner = i
		}
		return oefProblem(b, []float64{160, 280, 280, 280}, nil, js)
	}}
	for _, tc := range []struct {
		in  instance
		set alloc.OEFSettings
	}{
		{distinct(256, 10), alloc.OEFSettings{Method: alloc.OEFFullModel}},
		{distinct(256, 10), alloc.OEFSettings{}},
		{distinct(1024, 10), alloc.OEFSettings{}},
		{distinct(1024, 10), alloc.OEFSettings{EnvyTolerance: 0.05}},
		{noisy, alloc.OEFSettings{}},
		{noisy, alloc.OEFSettings{EnvyTolerance: 0.05}},
		{noisyOwners, alloc.OEFSettings{}},
		{distinct(2048, 4), alloc.OEFSettings{}},
		{distinct(4096, 10), alloc.OEFSettings{}},
		{distinct(4096, 10), alloc.OEFSettings{EnvyTolerance: 0.05}},
	} {
		name := tc.in.name + "/" + tc.set.Method.String()
		if tc.set.EnvyTolerance > 0 {
			name += fmt.Sprintf("/envy-tolerance=%g", tc.set.EnvyTolerance)
		}
		b.Run(name, func(b *testing.B) {
			p := tc.in.p(b)
			pol := alloc.OEF{Mode: alloc.Cooperative, Settings: &tc.set}
			var cert alloc.OEFCertificate
			for b.Loop() {
				var err error
				if _, cert, err = pol.AllocateCertified(context.Background(), p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(max(cert.Envy, 0), "envy")
			if gap := cert.Gap(); !math.IsInf(gap, 1) {
				b.ReportMetric(max(gap, 0), "gap")
			}
			b.ReportMetric(cert.Throughput, "throughput")
		})
	}
}

// BenchmarkLPBackendsOEF times OEF's structured methods with each exact
// LP backend in one run (see BenchmarkLPBackends): non-cooperative at
// 4,096 users × 10 types, cooperative at 256 × 3, distinct rows.
func BenchmarkLPBackendsOEF(b *testing.B) {
	backends := []lp.Backend{lp.PureGo}
	if lp.Default.Resolve() == lp.CLP {
		backends = []lp.Backend{lp.CLP, lp.PureGo}
	}
	for _, c := range []struct {
		mode         alloc.OEFMode
		users, types int
	}{{alloc.NonCooperative, 4096, 10}, {alloc.Cooperative, 256, 3}} {
		p := oefBenchProblem(b, c.users, c.types, 0, 1)
		for _, be := range backends {
			b.Run(fmt.Sprintf("%v/users=%d/types=%d/%v", c.mode, c.users, c.types, be), func(b *testing.B) {
				pol := alloc.OEF{Mode: c.mode, Settings: &alloc.OEFSettings{Method: alloc.OEFStructured, LP: &lp.Settings{Backend: be}}}
				if _, err := pol.Allocate(context.Background(), p); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := pol.Allocate(context.Background(), p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// oefCappedBenchProblem is oefBenchProblem with 1 to 4 one-GPU jobs per
// user (its job type's row each), so that demand caps of 1 to 4 GPUs bind
// for some users and not others: about a GPU per two users, two jobs per
// user on average.
func oefCappedBenchProblem(b *testing.B, users, types, jobTypes int, seed uint64) *alloc.Problem {
	p := oefBenchProblem(b, users, types, jobTypes, seed)
	r := rand.New(rand.NewPCG(seed, 2))
	var jobs []alloc.Job
	for _, j := range p.Jobs {
		n := 1 + r.IntN(4)
		for c := range n {
			jobs = append(jobs, alloc.Job{ID: alloc.JobID(fmt.Sprintf("%s-%d", j.ID, c)), Owner: j.Owner, Gang: 1, Weight: 1})
		}
	}
	row := map[alloc.TenantID][]float64{}
	for i, j := range p.Jobs {
		row[j.Owner] = p.Throughputs.Row(i)
	}
	for i := range jobs {
		jobs[i].Rates = row[jobs[i].Owner]
	}
	q, err := alloc.NewJobProblem(p.Capacity, p.Tenants, jobs)
	if err != nil {
		b.Fatal(err)
	}
	return q
}

// BenchmarkOEFCapped measures OEF with demand caps at 1,000 users × 10
// types sharing 26 job types: the instance of BenchmarkOEFCooperative's
// last rows (one one-GPU job per user, so a cap of one GPU, binding for
// users owed more) and one with 1 to 4 jobs per user
// (oefCappedBenchProblem), where caps per unit of weight take six values
// and the classes, (job type, cap per unit of weight), triple. Both modes:
// cooperative (capped envy rows and sharing floors, by envy-row
// generation) and non-cooperative (progressive filling). It checks the
// caps and reports the users held at their cap.
func BenchmarkOEFCapped(b *testing.B) {
	for _, mode := range []alloc.OEFMode{alloc.Cooperative, alloc.NonCooperative} {
		for _, jobs := range []string{"1", "1-4"} {
			b.Run(fmt.Sprintf("users=1000/types=10/jobtypes=26/jobs=%s/%v", jobs, mode), func(b *testing.B) {
				p := oefBenchProblem(b, 1000, 10, 26, 1)
				if jobs != "1" {
					p = oefCappedBenchProblem(b, 1000, 10, 26, 1)
				}
				pol := alloc.OEF{Mode: mode, DemandCaps: true}
				a, err := pol.Allocate(context.Background(), p)
				if err != nil {
					b.Fatal(err)
				}
				capped := 0
				for u, t := range p.Tenants {
					var held, demand float64
					for i, j := range p.Jobs {
						if j.Owner == t.ID {
							held += sum(a.GPUs[i])
							demand += float64(j.Gang)
						}
					}
					if held > demand+oefTol {
						b.Fatalf("tenant %d holds %v GPUs, demand %v", u, held, demand)
					}
					if held >= demand-oefTol {
						capped++
					}
				}
				cpu := cpuTime()
				for b.Loop() {
					if _, err := pol.Allocate(context.Background(), p); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(capped), "users-at-cap")
				b.ReportMetric((cpuTime()-cpu).Seconds()*1e3/float64(b.N), "cpu-ms/op")
			})
		}
	}
}
