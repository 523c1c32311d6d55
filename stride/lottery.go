package stride

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
)

// LotteryMode is one of the lottery schedulers Gandiva_fair compares its
// gang-aware stride with (section 3.1, Table 2).
type LotteryMode int

const (
	// Backfill is lottery plus backfilling: winners are drawn without
	// replacement; one that does not fit the GPUs left is skipped and
	// another drawn, until the GPUs are used or nothing left fits. Large
	// gangs are skipped more often than small ones, so it is unfair to
	// them.
	Backfill LotteryMode = iota + 1
	// GangLottery is the gang-aware lottery: separate lotteries (with
	// replacement) until the GPUs are used or nothing left fits; a winner
	// that does not fit joins a waiting queue, and waiting jobs run first
	// in the next quantum, in the order they joined. The paper finds it
	// fair over a thousand quanta and uneven over 100 (Table 2). Read
	// literally, as here, it is not fair even in the long run: the
	// lotteries go on while small jobs fill the last GPUs, so a large
	// gang wins, and is queued, in most quanta it does not run
	// (TestTable2GangAwareLottery).
	GangLottery
)

// Lottery is a gang-aware lottery scheduler for one server of identical
// GPUs: each quantum, jobs win in proportion to their tickets (Weight)
// divided by their gang, "normalising tickets by job size", so that, like
// gang-aware stride, GPU time and not run count follows the tickets. It
// draws from the rand.Source it was built with, so equal sources give
// equal schedules. The zero value is not usable; build one with
// NewLottery.
type Lottery struct {
	gpus int
	mode LotteryMode
	rng  *rand.Rand
	jobs []alloc.Job // by ID
	wait []alloc.JobID
	last int
	ran  bool
}

// NewLottery returns a lottery scheduler of mode for a server of gpus GPUs,
// drawing from src. It returns an *gpufair.InputError wrapping
// gpufair.ErrValue for fewer than one GPU, an unknown mode or a nil source.
func NewLottery(gpus int, mode LotteryMode, src rand.Source) (*Lottery, error) {
	switch {
	case gpus < 1:
		return nil, gpufair.Invalid("Server.GPUs", "", gpufair.ErrValue, "%d GPUs", gpus)
	case mode != Backfill && mode != GangLottery:
		return nil, gpufair.Invalid("LotteryMode", "", gpufair.ErrValue, "mode %d", int(mode))
	case src == nil:
		return nil, gpufair.Invalid("Source", "", gpufair.ErrValue, "no source of randomness")
	}
	return &Lottery{gpus: gpus, mode: mode, rng: rand.New(src)}, nil
}

// Add puts j on the server; it returns the errors of Scheduler.Add.
func (l *Lottery) Add(j alloc.Job) error {
	if err := validJob(j, l.gpus, "server"); err != nil {
		return err
	}
	i, found := slices.BinarySearchFunc(l.jobs, j.ID, func(a alloc.Job, id alloc.JobID) int { return cmp.Compare(a.ID, id) })
	if found {
		return gpufair.Invalid("Job.ID", string(j.ID), gpufair.ErrDuplicate, "already on the server")
	}
	l.jobs = slices.Insert(l.jobs, i, j)
	return nil
}

// Remove takes job id off the server and reports whether it was there.
func (l *Lottery) Remove(id alloc.JobID) bool {
	i, found := slices.BinarySearchFunc(l.jobs, id, func(a alloc.Job, id alloc.JobID) int { return cmp.Compare(a.ID, id) })
	if !found {
		return false
	}
	l.jobs = slices.Delete(l.jobs, i, i+1)
	l.wait = slices.DeleteFunc(l.wait, func(w alloc.JobID) bool { return w == id })
	return true
}

// Schedule runs quantum q and returns the jobs that run, in the order they
// were chosen. q must exceed the previous quantum's index; otherwise it
// returns an error wrapping gpufair.ErrOrder and changes nothing.
func (l *Lottery) Schedule(q int) ([]alloc.Job, error) {
	if l.ran && q <= l.last {
		return nil, gpufair.Invalid("Quantum", "", gpufair.ErrOrder, "quantum %d after %d", q, l.last)
	}
	l.ran, l.last = true, q
	free := l.gpus
	var out []alloc.Job
	chosen := make([]bool, len(l.jobs))
	index := func(id alloc.JobID) int {
		i, _ := slices.BinarySearchFunc(l.jobs, id, func(a alloc.Job, id alloc.JobID) int { return cmp.Compare(a.ID, id) })
		return i
	}
	run := func(i int) {
		chosen[i] = true
		free -= l.jobs[i].Gang
		out = append(out, l.jobs[i])
	}
	if l.mode == GangLottery {
		var still []alloc.JobID
		for _, id := range l.wait {
			if i := index(id); l.jobs[i].Gang <= free {
				run(i)
			} else {
				still = append(still, id)
			}
		}
		l.wait = still
	}
	// Backfill draws without replacement: chosen and skipped jobs leave
	// the draw. GangLottery draws with replacement, from every job: a
	// winner already running this quantum changes nothing.
	skipped := make([]bool, len(l.jobs))
	inDraw := func(i int) bool { return l.mode == GangLottery || (!chosen[i] && !skipped[i]) }
	for {
		var total float64
		fits := false
		for i, j := range l.jobs {
			if inDraw(i) {
				total += j.Weight / float64(j.Gang)
			}
			fits = fits || (!chosen[i] && !skipped[i] && j.Gang <= free)
		}
		if free == 0 || !fits {
			return out, nil
		}
		x := l.rng.Float64() * total
		win := -1
		for i, j := range l.jobs {
			if !inDraw(i) {
				continue
			}
			win = i
			if x -= j.Weight / float64(j.Gang); x < 0 {
				break
			}
		}
		switch {
		case chosen[win]:
		case l.jobs[win].Gang <= free:
			run(win)
		case l.mode == Backfill:
			skipped[win] = true
		case !slices.Contains(l.wait, l.jobs[win].ID):
			l.wait = append(l.wait, l.jobs[win].ID)
		}
	}
}
