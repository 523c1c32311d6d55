package stride

import (
	"cmp"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
)

// strideOf returns job j's stride, Gang/Weight: what one quantum of its gang
// adds to its pass.
func strideOf(j alloc.Job) float64 { return float64(j.Gang) / j.Weight }

// entry is a job's stride state. Its pass is base + n·stride, recomputed
// rather than accumulated so that equal-rate jobs tie exactly.
type entry struct {
	alloc.Job
	stride float64
	base   float64
	n      int64
	pass   float64
}

func (e *entry) advance() {
	e.n++
	e.pass = e.base + float64(e.n)*e.stride
}

func (e *entry) retune(w float64) {
	e.Weight = w
	e.stride = strideOf(e.Job)
	e.base, e.n = e.pass, 0
}

func byPass(a, b *entry) int {
	if c := cmp.Compare(a.pass, b.pass); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// Scheduler is Gandiva_fair's gang-aware stride scheduler for one server of
// GPUs identical GPUs (Algorithm 1). Each call to Schedule is one quantum:
// jobs in increasing (pass, JobID) order run while GPUs are free, each job
// that fits advancing its pass by its stride, each that does not keeping it.
// A job that joins gets the smallest pass of the jobs present (or, on an
// empty server, the smallest pass seen at the last quantum or removal), so it
// neither owes nor is owed service.
//
// Schedule costs O(n log n) for n jobs; Add and Remove O(n).
// The zero value is not usable; build one with NewScheduler.
type Scheduler struct {
	gpus  int
	jobs  []*entry // kept in (pass, ID) order after each quantum
	vtime float64  // smallest pass when the server last changed
	last  int
	ran   bool
}

// NewScheduler returns a scheduler for a server of gpus GPUs; gpus must be
// at least 1.
func NewScheduler(gpus int) (*Scheduler, error) {
	if gpus < 1 {
		return nil, gpufair.Invalid("Server.GPUs", "", gpufair.ErrValue, "%d GPUs", gpus)
	}
	return &Scheduler{gpus: gpus}, nil
}

// GPUs returns the server's number of GPUs.
func (s *Scheduler) GPUs() int { return s.gpus }

// Len returns the number of jobs on the server.
func (s *Scheduler) Len() int { return len(s.jobs) }

func (s *Scheduler) find(id alloc.JobID) int {
	for i, e := range s.jobs {
		if e.ID == id {
			return i
		}
	}
	return -1
}

func (s *Scheduler) minPass() float64 {
	if len(s.jobs) == 0 {
		return s.vtime
	}
	m := s.jobs[0].pass
	for _, e := range s.jobs[1:] {
		m = min(m, e.pass)
	}
	return m
}

// Add puts j on the server at the smallest pass present. It returns an
// *gpufair.InputError wrapping gpufair.ErrValue for an empty ID, a Gang below
// 1 or a Weight that is not positive and finite or gives a stride
// (Gang/Weight) above 1e250, gpufair.ErrTooLarge for a
// job larger than the server and gpufair.ErrDuplicate for an ID already
// present. The job's Weight is its tickets; its Owner is not used.
func (s *Scheduler) Add(j alloc.Job) error {
	if err := validJob(j, s.gpus, "server"); err != nil {
		return err
	}
	if s.find(j.ID) >= 0 {
		return gpufair.Invalid("Job.ID", string(j.ID), gpufair.ErrDuplicate, "already on the server")
	}
	p := s.minPass()
	e := &entry{Job: j, stride: strideOf(j), base: p, pass: p}
	i, _ := slices.BinarySearchFunc(s.jobs, e, byPass)
	s.jobs = slices.Insert(s.jobs, i, e)
	return nil
}

func validJob(j alloc.Job, room int, where string) error {
	id := string(j.ID)
	switch {
	case j.ID == "":
		return gpufair.Invalid("Job.ID", "", gpufair.ErrValue, "empty job ID")
	case j.Gang < 1:
		return gpufair.Invalid("Job.Gang", id, gpufair.ErrValue, "gang %d", j.Gang)
	case j.Gang > room:
		return gpufair.Invalid("Job.Gang", id, gpufair.ErrTooLarge, "%d GPUs on a %s of %d", j.Gang, where, room)
	}
	return checkJobWeight("Job.Weight", id, j.Weight, j.Gang)
}

// Remove takes job id off the server and reports whether it was there.
func (s *Scheduler) Remove(id alloc.JobID) bool {
	i := s.find(id)
	if i < 0 {
		return false
	}
	s.jobs = slices.Delete(s.jobs, i, i+1)
	if len(s.jobs) > 0 {
		s.vtime = s.minPass()
	}
	return true
}

// SetWeight changes job id's weight (tickets), and so its stride from its
// current pass on. It returns gpufair.ErrValue for a weight that is not
// positive and finite or whose stride (gang over weight) exceeds 1e250, and
// gpufair.ErrUnknownID if the job is not on the server.
func (s *Scheduler) SetWeight(id alloc.JobID, w float64) error {
	i := s.find(id)
	if i < 0 {
		return gpufair.Invalid("Job.ID", string(id), gpufair.ErrUnknownID, "not on the server")
	}
	if err := checkJobWeight("Job.Weight", string(id), w, s.jobs[i].Gang); err != nil {
		return err
	}
	s.jobs[i].retune(w)
	return nil
}

// Pass returns job id's pass value.
func (s *Scheduler) Pass(id alloc.JobID) (float64, bool) {
	if i := s.find(id); i >= 0 {
		return s.jobs[i].pass, true
	}
	return 0, false
}

// Jobs returns the jobs on the server in (pass, JobID) order.
func (s *Scheduler) Jobs() []alloc.Job {
	out := make([]alloc.Job, len(s.jobs))
	for i, e := range s.jobs {
		out[i] = e.Job
	}
	return out
}

// Weight returns the total weight (tickets) of the jobs on the server.
func (s *Scheduler) Weight() float64 {
	var t float64
	for _, e := range s.jobs {
		t += e.Weight
	}
	return t
}

// Schedule runs quantum q on all of the server's GPUs and returns the jobs
// that run, in the order they were chosen. q must exceed the previous
// quantum's index (gaps are idle quanta); otherwise Schedule returns an
// error wrapping gpufair.ErrOrder and changes nothing.
func (s *Scheduler) Schedule(q int) ([]alloc.Job, error) {
	if err := s.tick(q); err != nil {
		return nil, err
	}
	out, _ := s.run(s.gpus, nil)
	return out, nil
}

func (s *Scheduler) tick(q int) error {
	if s.ran && q <= s.last {
		return gpufair.Invalid("Quantum", "", gpufair.ErrOrder, "quantum %d after %d", q, s.last)
	}
	s.ran, s.last = true, q
	return nil
}

// run is one quantum of Algorithm 1 on free GPUs; it appends the jobs that
// run to out and returns the GPUs they use.
func (s *Scheduler) run(free int, out []alloc.Job) ([]alloc.Job, int) {
	used := 0
	for _, e := range s.jobs {
		if free == 0 {
			break
		}
		if e.Gang <= free {
			free -= e.Gang
			used += e.Gang
			e.advance()
			out = append(out, e.Job)
		}
	}
	slices.SortFunc(s.jobs, byPass)
	if len(s.jobs) > 0 {
		s.vtime = s.jobs[0].pass
	}
	return out, used
}

// smallest returns the gang of the smallest job on the server, or 0.
func (s *Scheduler) smallest() int {
	m := 0
	for _, e := range s.jobs {
		if m == 0 || e.Gang < m {
			m = e.Gang
		}
	}
	return m
}
