package lendgraphtest

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Retention is how long a job and its file stay retrievable.
const Retention = 30 * 24 * time.Hour

// Job states.
const (
	stateQueued    = "queued"
	stateRunning   = "running"
	stateCompleted = "completed"
	stateFailed    = "failed"
	stateCancelled = "cancelled"
)

// errJobCancelled is returned by jobCtx.Progress once the job was cancelled.
var errJobCancelled = errors.New("job cancelled")

// jobSpec is what a job kind supplies to the shared job engine.
type jobSpec struct {
	kind     string // "enrichment" or "delivery"
	resource string // delivery: the resource path segment
	total    int64
	// run does the work, calling jc.Progress at each tick (and stopping when
	// it returns errJobCancelled). A returned error fails the job with that
	// message. It runs without s.mu held.
	run func(ctx context.Context, jc *jobCtx) error
	// complete runs under s.mu when run succeeded and the job was not
	// cancelled meanwhile: billing and the results file, atomically with
	// the move to completed.
	complete func(j *fakeJob)
	// render adds the kind's fields to the status record (under s.mu).
	render func(j *fakeJob, rec map[string]any)
}

// fakeJob is one job of either kind.
type fakeJob struct {
	id          string
	spec        jobSpec
	owner       Caller
	state       string
	createdAt   time.Time
	startedAt   time.Time
	completedAt time.Time
	errMsg      string
	processed   int64 // rows handled so far
	counters    map[string]int64
	objectKey   string // results file, once completed
	state2      any    // kind-specific state
}

// jobCtx is handed to a running job.
type jobCtx struct {
	s   *Server
	job *fakeJob
	// paceStart and paced pace Progress to the kind's rate; pacedRate is
	// the rate they were measured at (a new rate starts a new measure).
	paceStart time.Time
	paced     int64
	pacedRate float64
}

// Job is the view of a job a test can inspect.
type Job struct {
	ID, Kind, State string
	Owner           Caller
	Processed       int64
	Counters        map[string]int64
}

// Job returns a snapshot of a job, false when unknown.
func (s *Server) Job(id string) (Job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return Job{}, false
	}
	cp := map[string]int64{}
	for k, v := range j.counters {
		cp[k] = v
	}
	return Job{ID: j.id, Kind: j.spec.kind, State: j.state, Owner: j.owner, Processed: j.processed, Counters: cp}, true
}

// Jobs returns a snapshot of every job the server holds, in no order.
func (s *Server) Jobs() []Job {
	s.mu.Lock()
	ids := make([]string, 0, len(s.jobs))
	for id := range s.jobs {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	out := make([]Job, 0, len(ids))
	for _, id := range ids {
		if j, ok := s.Job(id); ok {
			out = append(out, j)
		}
	}
	return out
}

// WaitJobs waits until every job the server holds has ended (completed,
// failed or cancelled), so that each one that completed has been charged:
// count the ledger (Debits) after it. It returns ctx's error when ctx ends
// first.
func (s *Server) WaitJobs(ctx context.Context) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		s.mu.Lock()
		running := false
		for _, j := range s.jobs {
			running = running || j.state == stateQueued || j.state == stateRunning
		}
		s.mu.Unlock()
		if !running {
			return nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Progress records n more rows handled and counter deltas, paces the work
// to the kind's configured rate, and reports errJobCancelled once the job
// was cancelled (the worker stops at its next tick).
func (jc *jobCtx) Progress(ctx context.Context, n int64, deltas map[string]int64) error {
	s := jc.s
	s.mu.Lock()
	j := jc.job
	if j.state == stateCancelled {
		s.mu.Unlock()
		return errJobCancelled
	}
	j.processed += n
	for k, v := range deltas {
		j.counters[k] += v
	}
	rate := s.cfg.jobRate[j.spec.kind]
	s.mu.Unlock()
	if rate > 0 && n > 0 {
		// Pace against the worker's start, so the time spent producing
		// rows counts towards the rate instead of adding to it.
		if jc.paceStart.IsZero() || rate != jc.pacedRate {
			jc.paceStart, jc.paced, jc.pacedRate = time.Now(), 0, rate
		}
		jc.paced += n
		due := jc.paceStart.Add(time.Duration(float64(jc.paced) / rate * float64(time.Second)))
		t := time.NewTimer(time.Until(due))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Job returns the job (read fields under s.mu).
func (jc *jobCtx) Job() *fakeJob { return jc.job }

// startJob registers a queued job owned by c and starts its worker.
func (s *Server) startJob(c Caller, spec jobSpec, prefix string) *fakeJob {
	s.mu.Lock()
	j := &fakeJob{id: s.newID(prefix), spec: spec, owner: c, state: stateQueued,
		createdAt: s.nowLocked(), counters: map[string]int64{}}
	s.jobs[j.id] = j
	s.mu.Unlock()
	s.wg.Add(1)
	go s.runJob(j)
	return j
}

func (s *Server) runJob(j *fakeJob) {
	defer s.wg.Done()
	s.mu.Lock()
	if j.state != stateQueued {
		s.mu.Unlock()
		return
	}
	j.state = stateRunning
	j.startedAt = s.nowLocked()
	s.mu.Unlock()
	err := j.spec.run(s.ctx, &jobCtx{s: s, job: j})
	s.mu.Lock()
	defer s.mu.Unlock()
	if j.state == stateCancelled || s.ctx.Err() != nil {
		return
	}
	j.completedAt = s.nowLocked()
	if err != nil {
		j.state = stateFailed
		j.errMsg = err.Error()
		return
	}
	if j.spec.complete != nil {
		j.spec.complete(j)
	}
	j.state = stateCompleted
}

// jobFor looks up a job for a status or cancel request, answering 404
// (unknown or past retention) and 403 (another caller's job) itself.
func (s *Server) jobForLocked(w http.ResponseWriter, id, kind string, c Caller) *fakeJob {
	j, ok := s.jobs[id]
	if !ok || j.spec.kind != kind || s.nowLocked().Sub(j.createdAt) > Retention {
		writeError(w, http.StatusNotFound, "job not found", nil)
		return nil
	}
	if j.owner.Key != c.Key {
		writeError(w, http.StatusForbidden, "job belongs to another caller", nil)
		return nil
	}
	return j
}

// statusRecordLocked renders a job's status record: the shared fields and
// the kind's own.
func (s *Server) statusRecordLocked(j *fakeJob) map[string]any {
	rec := map[string]any{"jobId": j.id, "status": j.state}
	if !j.startedAt.IsZero() {
		rec["startedAt"] = j.startedAt.UTC().Format(time.RFC3339Nano)
	}
	if !j.completedAt.IsZero() {
		rec["completedAt"] = j.completedAt.UTC().Format(time.RFC3339Nano)
	}
	if j.state == stateFailed {
		rec["error"] = j.errMsg
	}
	if j.state == stateCompleted && j.objectKey != "" {
		rec["resultsUrl"] = s.signedURLLocked(j.objectKey) // re-signed on every fetch
	}
	if j.spec.render != nil {
		j.spec.render(j, rec)
	}
	return rec
}

// serveJobStatus answers GET on a job.
func (s *Server) serveJobStatus(w http.ResponseWriter, id, kind string, c Caller) {
	s.mu.Lock()
	j := s.jobForLocked(w, id, kind, c)
	if j == nil {
		s.mu.Unlock()
		return
	}
	rec := s.statusRecordLocked(j)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, rec)
}

// serveJobCancel answers DELETE on a job: a queued or running job is marked
// cancelled at once (its worker stops at its next tick, nothing is charged);
// a finished one answers 409 and nothing changes.
func (s *Server) serveJobCancel(w http.ResponseWriter, id, kind string, c Caller) {
	s.mu.Lock()
	j := s.jobForLocked(w, id, kind, c)
	if j == nil {
		s.mu.Unlock()
		return
	}
	if j.state != stateQueued && j.state != stateRunning {
		st := j.state
		s.mu.Unlock()
		writeError(w, http.StatusConflict, "job already "+st, map[string]any{"status": st})
		return
	}
	j.state = stateCancelled
	j.completedAt = s.nowLocked()
	rec := s.statusRecordLocked(j)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, rec)
}
