package actors

// JobQueue is the run queue of durable jobs: FIFO within a repository and
// round-robin across the repositories that have queued jobs, so one
// repository flooding the queue cannot starve the others. It is not safe
// for concurrent use (the jobs actor owns it).
type JobQueue struct {
	byRepo map[string][]string // repo id -> job ids, oldest first
	ring   []string            // repos with queued jobs, in service order
	n      int
}

// NewJobQueue returns an empty queue.
func NewJobQueue() *JobQueue { return &JobQueue{byRepo: map[string][]string{}} }

// Len returns the number of queued jobs.
func (q *JobQueue) Len() int { return q.n }

// Push appends a job of a repository.
func (q *JobQueue) Push(repoID, jobID string) {
	if _, ok := q.byRepo[repoID]; !ok {
		q.ring = append(q.ring, repoID)
	}
	q.byRepo[repoID] = append(q.byRepo[repoID], jobID)
	q.n++
}

// Pop removes and returns the next job: the oldest job of the repository
// whose turn it is, skipping jobs for which ok returns false (they stay
// queued, in place). ok may be nil. The served repository moves to the
// back of the ring.
func (q *JobQueue) Pop(ok func(repoID, jobID string) bool) (repoID, jobID string, found bool) {
	for i, r := range q.ring {
		ids := q.byRepo[r]
		for j, id := range ids {
			if ok != nil && !ok(r, id) {
				continue
			}
			q.removeAt(i, r, j)
			return r, id, true
		}
	}
	return "", "", false
}

// Remove drops a queued job; it reports whether it was queued.
func (q *JobQueue) Remove(jobID string) bool {
	for i, r := range q.ring {
		for j, id := range q.byRepo[r] {
			if id == jobID {
				q.removeAtKeep(i, r, j)
				return true
			}
		}
	}
	return false
}

// removeAt removes job j of the repo at ring position i and rotates the
// repo to the back (or drops it when it has nothing left).
func (q *JobQueue) removeAt(i int, r string, j int) {
	ids := q.byRepo[r]
	ids = append(ids[:j:j], ids[j+1:]...)
	q.n--
	q.ring = append(q.ring[:i:i], q.ring[i+1:]...)
	if len(ids) == 0 {
		delete(q.byRepo, r)
		return
	}
	q.byRepo[r] = ids
	q.ring = append(q.ring, r)
}

// removeAtKeep removes a job without changing whose turn it is.
func (q *JobQueue) removeAtKeep(i int, r string, j int) {
	ids := q.byRepo[r]
	ids = append(ids[:j:j], ids[j+1:]...)
	q.n--
	if len(ids) == 0 {
		delete(q.byRepo, r)
		q.ring = append(q.ring[:i:i], q.ring[i+1:]...)
		return
	}
	q.byRepo[r] = ids
}
