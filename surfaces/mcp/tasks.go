package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/jsonx"
)

// Long work as MCP tasks backed by durable jobs (docs/mcp.md, "Tasks").
//
// A task is a durable job seen through the MCP Tasks protocol: the
// extension io.modelcontextprotocol/tasks of MCP 2026-07-28 (SEP-2663:
// the client declares it in the request's _meta capabilities, the server
// answers a tools/call with resultType "task", tasks/get carries the final
// result) and the experimental tasks of 2025-11-25 (params.task on the
// call, CreateTaskResult {task}, tasks/get, tasks/result, tasks/list,
// tasks/cancel). The go-sdk knows neither, and refuses methods it does not
// know before any middleware, so tasks are served in front of it, by
// harnessd's own transports (StreamTransport.Tasks, WithTasks): tasks/*
// requests are answered there, and the answer of a task-eligible tools/call
// (job_start, or a call whose result hands its work to a durable job:
// escalated.job_id) is turned into a task handle on its way out. The call
// itself runs as any other, through the go-sdk and the request pipeline
// (caller, roles, gate, approvals, aliases).
//
// The task id is the job id. Nothing about a task lives in memory: the job
// is persisted before job_start answers, so tasks/get resolves the moment
// the client has the id, and after any restart of the daemon. The id is
// not a bearer secret: whoever may reach the daemon (its 0600 socket, or
// the bearer token on TCP) may already list every job (job_list) and read
// it (job_status), and every tasks/* request runs the job operation it maps
// to through the pipeline, so the role gate and the audit see it as that
// operation. (A job id still carries 48 random bits beside its timestamp:
// not enumerable without that access.)
//
// Job states map onto task states (TaskStatusOf): queued and running are
// working; succeeded, failed, timed_out and interrupted are completed, with
// the job_status result as the tool result (isError and an error code when
// the job did not succeed: a failed job is a tool error, not a JSON-RPC
// error, which is what the extension's failed status is reserved for);
// cancelled is cancelled. A job never waits for input once it exists:
// approvals are decided before job_start creates it (by the client's
// person through the call's multi-round-trip input request, elicit.go, or
// by a person with `harness approvals`), as the extension asks of input a
// server needs before it creates a task. So no task is input_required, and
// tasks/update is refused: an approval is a person's decision, never an
// agent's answer to its own task.

// TasksExtension is the identifier of the MCP Tasks extension.
const TasksExtension = "io.modelcontextprotocol/tasks"

// protocol2026 is the first revision with the Tasks extension and
// per-request capabilities.
const protocol2026 = "2026-07-28"

// codeMissingCapability is the JSON-RPC code of a request that needs a
// client capability the request did not declare (MCP 2026-07-28).
const codeMissingCapability = -32021

// modelImmediateResponse is the 2025-11-25 _meta key of the text a host
// may hand its model while the task runs.
const modelImmediateResponse = "io.modelcontextprotocol/model-immediate-response"

// relatedTask is the 2025-11-25 _meta key naming a message's task.
const relatedTask = "io.modelcontextprotocol/related-task"

// Task statuses (both revisions).
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// Poll intervals suggested to clients: short at first, longer as a job
// runs on (a client polls a job of an hour about once in 5 s).
const (
	pollMin = 500 * time.Millisecond
	pollMax = 5 * time.Second
)

// resultWait is how long one job_status call of tasks/result waits (the
// operation's maximum); tasks/result waits again until the job ends.
const resultWait = 600

// Tasks serves MCP tasks over a Backend's durable jobs. One Tasks serves
// every transport of a daemon; it holds no state of its own.
type Tasks struct {
	ex Backend
}

// NewTasks returns the tasks of ex's durable jobs.
func NewTasks(ex Backend) *Tasks { return &Tasks{ex: ex} }

// TaskStatusOf maps a job state onto an MCP task status, "" for a state
// it does not know.
func TaskStatusOf(state string) string {
	switch state {
	case "queued", "running":
		return TaskWorking
	case "succeeded", "failed", "timed_out", "interrupted":
		return TaskCompleted
	case "cancelled":
		return TaskCancelled
	}
	return ""
}

// legacyStatusOf is the 2025-11-25 status of a job state: there, a tool
// result with isError (a job that did not succeed) is a failed task.
func legacyStatusOf(state string) string {
	s := TaskStatusOf(state)
	if s == TaskCompleted && state != "succeeded" {
		return TaskFailed
	}
	return s
}

// jobView is what a task needs of a job_status result.
type jobView struct {
	JobID       string     `json:"job_id"`
	State       string     `json:"state"`
	Argv        []string   `json:"argv"`
	Attempt     int        `json:"attempt"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	ExitCode    *int       `json:"exit_code"`
	Signal      string     `json:"signal"`
	TimedOut    bool       `json:"timed_out"`
	DurationMs  float64    `json:"duration_ms"`
	StdoutBytes int64      `json:"stdout_bytes"`
	StderrBytes int64      `json:"stderr_bytes"`
	Error       *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func viewOf(raw json.RawMessage) (jobView, error) {
	var j jobView
	if err := json.Unmarshal(raw, &j); err != nil {
		return j, err
	}
	if j.JobID == "" || TaskStatusOf(j.State) == "" {
		return j, fmt.Errorf("not a job: job_id %q, state %q", j.JobID, j.State)
	}
	return j, nil
}

// updatedAt is when the job last changed state.
func (j jobView) updatedAt() time.Time {
	switch {
	case j.FinishedAt != nil:
		return *j.FinishedAt
	case j.StartedAt != nil:
		return *j.StartedAt
	}
	return j.CreatedAt
}

// pollInterval suggests how long to wait before the next tasks/get: a
// tenth of the time the job has run, between pollMin and pollMax.
func pollInterval(j jobView, now time.Time) time.Duration {
	d := now.Sub(j.CreatedAt) / 10
	return min(max(d, pollMin), pollMax)
}

// statusMessage says what the job is doing, or how it ended.
func statusMessage(j jobView) string {
	cmd := strings.Join(j.Argv, " ")
	if len(cmd) > 80 {
		cmd = cmd[:77] + "..."
	}
	out := humanSize(j.StdoutBytes + j.StderrBytes)
	switch j.State {
	case "queued":
		return fmt.Sprintf("job %s queued: %s", j.JobID, cmd)
	case "running":
		msg := fmt.Sprintf("job %s running: %s", j.JobID, cmd)
		if j.StartedAt != nil {
			msg += fmt.Sprintf(" (%s of output)", out)
		}
		return msg
	case "succeeded":
		return fmt.Sprintf("job %s succeeded in %.1fs (%s of output)", j.JobID, j.DurationMs/1000, out)
	case "cancelled":
		return fmt.Sprintf("job %s cancelled", j.JobID)
	case "timed_out":
		return fmt.Sprintf("job %s timed out after %.1fs", j.JobID, j.DurationMs/1000)
	case "interrupted":
		return fmt.Sprintf("job %s interrupted: harnessd restarted while it ran (job_start with retry.max re-runs it)", j.JobID)
	}
	msg := fmt.Sprintf("job %s failed", j.JobID)
	if j.ExitCode != nil {
		msg += fmt.Sprintf(" with exit code %d", *j.ExitCode)
	}
	if j.Signal != "" {
		msg += " (" + j.Signal + ")"
	}
	if j.Error != nil && j.Error.Message != "" {
		msg += ": " + j.Error.Message
	}
	return msg + "; job_logs has its output"
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// jobErrorCode is the error code of a job that ended without success.
func jobErrorCode(state string) errs.Code {
	switch state {
	case "timed_out":
		return errs.Timeout
	case "cancelled":
		return errs.Cancelled
	case "interrupted":
		return errs.Unavailable
	}
	return errs.JobFailed
}

// finalResult is the tool result of a finished job: job_status's result
// (raw, its structured content), and when the job did not succeed isError
// with structuredContent.error.code set (the job's own error when it has
// one, else JOB_FAILED, TIMEOUT or CANCELLED).
func finalResult(j jobView, raw json.RawMessage) (*mcp.CallToolResult, error) {
	if j.State == "succeeded" {
		var out any = raw
		return Result(out)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if e, _ := m["error"].(map[string]any); e == nil || e["code"] == nil {
		m["error"] = map[string]any{"code": string(jobErrorCode(j.State)), "message": statusMessage(j)}
	}
	b, err := jsonx.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}

// wireTask is a task on the wire: the 2026-07-28 extension's fields
// (ttlMs, pollIntervalMs, resultType, the inlined result) or the
// 2025-11-25 ones (ttl, pollInterval), never both.
type wireTask struct {
	ResultType     string          `json:"resultType,omitempty"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs,omitempty"`
	PollIntervalMs *int64          `json:"pollIntervalMs,omitempty"`
	TTL            *int64          `json:"ttl,omitempty"`
	PollInterval   *int64          `json:"pollInterval,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Meta           map[string]any  `json:"_meta,omitempty"`
	// legacy: no ttlMs member at all; ext: ttlMs null (unlimited).
	legacy bool
}

// MarshalJSON writes ttlMs (or ttl) as null: a job is kept until it is
// among the oldest finished jobs beyond the store's limit, not for a
// fixed time.
func (w wireTask) MarshalJSON() ([]byte, error) {
	type plain wireTask
	b, err := json.Marshal(plain(w))
	if err != nil {
		return nil, err
	}
	key := `"ttlMs":null`
	if w.legacy {
		key = `"ttl":null`
	}
	// b ends with '}' and holds at least taskId.
	return append(append(b[:len(b)-1:len(b)-1], ','), key+"}"...), nil
}

// taskOf is the task of a job, in the extension's shape or (legacy) the
// 2025-11-25 one.
func taskOf(j jobView, now time.Time, legacy bool) wireTask {
	w := wireTask{TaskID: j.JobID, Status: TaskStatusOf(j.State), StatusMessage: statusMessage(j),
		CreatedAt: j.CreatedAt.UTC().Format(time.RFC3339Nano), LastUpdatedAt: j.updatedAt().UTC().Format(time.RFC3339Nano), legacy: legacy}
	poll := pollInterval(j, now).Milliseconds()
	if legacy {
		w.Status = legacyStatusOf(j.State)
		w.PollInterval = &poll
	} else {
		w.PollIntervalMs = &poll
	}
	return w
}

// rpcError is a JSON-RPC error answer.
func rpcError(code int64, format string, a ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, a...)}
}

// missingCapability is the answer to a 2026-07-28 request that needs the
// extension and did not declare it.
func missingCapability() *jsonrpc.Error {
	e := rpcError(codeMissingCapability, "Missing required client capability: declare the extension %s in the request's _meta %q (extensions)", TasksExtension, mcp.MetaKeyClientCapabilities)
	e.Data = json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + TasksExtension + `":{}}}}`)
	return e
}

// taskParams are the members of a request's params the tasks read.
type taskParams struct {
	Name   string `json:"name"`
	TaskID *any   `json:"taskId"`
	Task   *struct {
		TTL *int64 `json:"ttl"`
	} `json:"task"`
	Cursor         *string                    `json:"cursor"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	Meta           struct {
		Protocol   string `json:"io.modelcontextprotocol/protocolVersion"`
		ClientInfo *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"io.modelcontextprotocol/clientInfo"`
		Caps struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"io.modelcontextprotocol/clientCapabilities"`
	} `json:"_meta"`
	// initialize
	ProtocolVersion string `json:"protocolVersion"`
	Capabilities    struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	} `json:"capabilities"`
	ClientInfo *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"clientInfo"`
}

// peer is what a connection knows of its client: the protocol revision
// and capabilities of its initialize (empty over stateless HTTP).
type peer struct {
	protocol string
	ext      bool
	client   harness.Client
	role     string // the session's role, "" = operator
}

// dialect is how a request speaks of tasks.
type dialect int

const (
	noTasks dialect = iota
	extTasks
	legacyTasks
)

// dialectOf is how a request speaks of tasks: the extension when it
// declares it (in its _meta, or, for a request without per-request
// capabilities, at initialize), else the 2025-11-25 tasks unless the
// request or its session is of 2026-07-28 (where tasks exist only as the
// extension).
func dialectOf(p *taskParams, pe peer) (d dialect, modern bool) {
	modern = p.Meta.Protocol >= protocol2026 || pe.protocol >= protocol2026
	if _, ok := p.Meta.Caps.Extensions[TasksExtension]; ok {
		return extTasks, modern
	}
	if p.Meta.Protocol == "" && pe.ext {
		return extTasks, modern
	}
	if modern {
		return noTasks, modern
	}
	return legacyTasks, modern
}

// callDialect is whether a tools/call's answer may become a task, and in
// which shape: the extension's when the request declares it, 2025-11-25's
// when it asks with params.task.
func callDialect(p *taskParams, pe peer) dialect {
	switch d, _ := dialectOf(p, pe); d {
	case extTasks:
		return extTasks
	case legacyTasks:
		if p.Task != nil {
			return legacyTasks
		}
	}
	return noTasks
}

// jobOfCall is the durable job a tool's result hands its work to: the job
// of job_start, or the job_id of any result that escalated to the Durable
// Path (escalated: {job_id, reason}).
func jobOfCall(tool string, structured json.RawMessage) string {
	var s struct {
		JobID     string `json:"job_id"`
		State     string `json:"state"`
		Escalated *struct {
			JobID string `json:"job_id"`
		} `json:"escalated"`
	}
	if json.Unmarshal(structured, &s) != nil {
		return ""
	}
	if s.Escalated != nil && s.Escalated.JobID != "" {
		return s.Escalated.JobID
	}
	if tool == "job_start" && s.State != "" {
		return s.JobID
	}
	return ""
}

// callerCtx is ctx for the job operations a tasks/* request maps to.
func callerCtx(ctx context.Context, p *taskParams, pe peer) context.Context {
	c := harness.Caller{Client: pe.client, Role: pe.role}
	if ci := p.Meta.ClientInfo; ci != nil {
		c.Client = harness.Client{Name: ci.Name, Version: ci.Version}
	}
	return harness.WithCaller(ctx, c)
}

// job runs job_status (with wait_s) for a task id: the job's view and
// job_status's result; a JSON-RPC error when there is no such task.
func (t *Tasks) job(ctx context.Context, id string, waitS int) (jobView, json.RawMessage, *jsonrpc.Error) {
	args := map[string]any{"job_id": id}
	if waitS > 0 {
		args["wait_s"] = waitS
	}
	return t.jobOp(ctx, "job_status", args)
}

func (t *Tasks) jobOp(ctx context.Context, op string, args map[string]any) (jobView, json.RawMessage, *jsonrpc.Error) {
	b, _ := json.Marshal(args)
	out, err := t.ex.Exec(ctx, op, b)
	if err != nil {
		switch errs.CodeOf(err) {
		case errs.NotFound, errs.InvalidArgument:
			return jobView{}, nil, rpcError(jsonrpc.CodeInvalidParams, "Failed to retrieve task: Task not found (task %v is not a job of this daemon; ids are job ids, job_...)", args["job_id"])
		}
		ce := errs.From(err)
		e := rpcError(jsonrpc.CodeInternalError, "%s: %s", ce.Code, ce.Message)
		if d, merr := json.Marshal(map[string]any{"code": ce.Code, "details": ce.Details}); merr == nil {
			e.Data = d
		}
		return jobView{}, nil, e
	}
	raw, err := jsonx.Marshal(out)
	if err != nil {
		return jobView{}, nil, rpcError(jsonrpc.CodeInternalError, "encode %s: %v", op, err)
	}
	j, err := viewOf(raw)
	if err != nil {
		return jobView{}, nil, rpcError(jsonrpc.CodeInternalError, "%s: %v", op, err)
	}
	return j, raw, nil
}

// Serve answers a tasks/* request (method and raw params) of a client
// known as pe; it returns the result or a JSON-RPC error. tasks/result
// waits for the job to end, until ctx ends.
func (t *Tasks) Serve(ctx context.Context, method string, params json.RawMessage, pe peer) (any, *jsonrpc.Error) {
	var p taskParams
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, rpcError(jsonrpc.CodeInvalidParams, "%s: params: %v", method, err)
		}
	}
	d, _ := dialectOf(&p, pe)
	if d == noTasks {
		return nil, missingCapability()
	}
	legacy := d == legacyTasks
	if method == "tasks/list" {
		if !legacy {
			return nil, rpcError(jsonrpc.CodeMethodNotFound, "tasks/list is not part of the %s extension (a client follows the task ids it was given)", TasksExtension)
		}
		return t.list(callerCtx(ctx, &p, pe), p.Cursor)
	}
	id, ok := taskIDOf(p.TaskID)
	switch {
	case method != "tasks/get" && method != "tasks/cancel" && method != "tasks/update" && method != "tasks/result":
		return nil, rpcError(jsonrpc.CodeMethodNotFound, "%s: no such method (tasks/get, tasks/cancel and tasks/update are served)", method)
	case method == "tasks/result" && !legacy:
		return nil, rpcError(jsonrpc.CodeMethodNotFound, "tasks/result is the 2025-11-25 form: with %s, tasks/get carries the final result", TasksExtension)
	case !ok:
		return nil, rpcError(jsonrpc.CodeInvalidParams, "%s needs params.taskId, a string (the taskId of the task handle)", method)
	}
	ctx = callerCtx(ctx, &p, pe)
	now := time.Now()
	switch method {
	case "tasks/get":
		j, raw, e := t.job(ctx, id, 0)
		if e != nil {
			return nil, e
		}
		w := taskOf(j, now, legacy)
		if legacy {
			return w, nil
		}
		w.ResultType = "complete"
		if w.Status == TaskCompleted {
			res, err := finalResult(j, raw)
			if err != nil {
				return nil, rpcError(jsonrpc.CodeInternalError, "task %s: result: %v", id, err)
			}
			b, err := json.Marshal(res)
			if err != nil {
				return nil, rpcError(jsonrpc.CodeInternalError, "task %s: result: %v", id, err)
			}
			// The inlined CallToolResult is a 2026-07-28 Result too, and
			// "Servers implementing this protocol version MUST include"
			// resultType (ext-tasks' client rejects the result without
			// it); the go-sdk keeps its own unexported. b is an object
			// holding at least content.
			w.Result = append([]byte(`{"resultType":"complete",`), b[1:]...)
		}
		return w, nil
	case "tasks/result":
		return t.result(ctx, id)
	case "tasks/cancel":
		return t.cancel(ctx, id, now, legacy)
	}
	// tasks/update: a job never asks for input once it exists.
	if _, _, e := t.job(ctx, id, 0); e != nil {
		return nil, e
	}
	return nil, rpcError(jsonrpc.CodeInvalidParams, "tasks/update: task %s has no outstanding input requests: harnessd tasks never wait for input. An approval is decided by a person (harness approvals approve|deny <approval_id>, or the client's own prompt when the call asked), never through tasks/update", id)
}

func taskIDOf(v *any) (string, bool) {
	if v == nil {
		return "", false
	}
	s, ok := (*v).(string)
	return s, ok && s != ""
}

// result waits for the job to end and answers its tool result (2025-11-25
// tasks/result), with the related-task _meta.
func (t *Tasks) result(ctx context.Context, id string) (any, *jsonrpc.Error) {
	for {
		j, raw, e := t.job(ctx, id, resultWait)
		if e != nil {
			return nil, e
		}
		if TaskStatusOf(j.State) != TaskWorking {
			res, err := finalResult(j, raw)
			if err != nil {
				return nil, rpcError(jsonrpc.CodeInternalError, "task %s: result: %v", id, err)
			}
			res.Meta = mcp.Meta{relatedTask: map[string]any{"taskId": id}}
			return res, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, rpcError(jsonrpc.CodeInternalError, "tasks/result: %v while task %s was %s", err, id, j.State)
		}
	}
}

// cancel cancels the job: the extension's empty acknowledgement, or the
// 2025-11-25 task (refused with -32602 when it had already ended).
func (t *Tasks) cancel(ctx context.Context, id string, now time.Time, legacy bool) (any, *jsonrpc.Error) {
	if legacy {
		j, _, e := t.job(ctx, id, 0)
		if e != nil {
			return nil, e
		}
		if s := legacyStatusOf(j.State); s != TaskWorking {
			return nil, rpcError(jsonrpc.CodeInvalidParams, "Cannot cancel task: already in terminal status '%s'", s)
		}
	}
	j, _, e := t.jobOp(ctx, "job_cancel", map[string]any{"job_id": id})
	if e != nil {
		return nil, e
	}
	if legacy {
		return taskOf(j, now, true), nil
	}
	return map[string]string{"resultType": "complete"}, nil
}

// list is the 2025-11-25 tasks/list: every job the daemon keeps, newest
// first, in one page.
func (t *Tasks) list(ctx context.Context, cursor *string) (any, *jsonrpc.Error) {
	if cursor != nil && *cursor != "" {
		return nil, rpcError(jsonrpc.CodeInvalidParams, "tasks/list: cursor %q: harnessd lists every task in one page, so there is no next page", *cursor)
	}
	b, _ := json.Marshal(map[string]any{"limit": 1000})
	out, err := t.ex.Exec(ctx, "job_list", b)
	if err != nil {
		ce := errs.From(err)
		return nil, rpcError(jsonrpc.CodeInternalError, "%s: %s", ce.Code, ce.Message)
	}
	raw, err := jsonx.Marshal(out)
	if err != nil {
		return nil, rpcError(jsonrpc.CodeInternalError, "encode job_list: %v", err)
	}
	var l struct {
		Jobs []json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, rpcError(jsonrpc.CodeInternalError, "job_list: %v", err)
	}
	now := time.Now()
	tasks := make([]wireTask, 0, len(l.Jobs))
	for _, r := range l.Jobs {
		if j, err := viewOf(r); err == nil {
			tasks = append(tasks, taskOf(j, now, true))
		}
	}
	return map[string]any{"tasks": tasks}, nil
}

// handle turns the result of a task-eligible tools/call into a task
// handle; it returns result unchanged when the call did not hand its work
// to a durable job (an error, a tool without a job).
func (t *Tasks) handle(ctx context.Context, tool string, d dialect, result json.RawMessage, pe peer) json.RawMessage {
	var r struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if d == noTasks || json.Unmarshal(result, &r) != nil || r.IsError {
		return result
	}
	id := jobOfCall(tool, r.StructuredContent)
	if id == "" {
		return result
	}
	j, err := viewOf(r.StructuredContent)
	if err != nil || j.JobID != id {
		// An escalated call names its job: read it (it is persisted
		// before the call answers).
		var e *jsonrpc.Error
		if j, _, e = t.job(harness.WithCaller(ctx, harness.Caller{Client: pe.client}), id, 0); e != nil {
			return result
		}
	}
	w := taskOf(j, time.Now(), d == legacyTasks)
	var out any = w
	if d == legacyTasks {
		out = map[string]any{"task": w, "_meta": map[string]any{
			modelImmediateResponse: fmt.Sprintf("%s: task %s; its result comes with tasks/result", statusMessage(j), id),
		}}
	} else {
		w.ResultType = "task"
		out = w
	}
	b, err := json.Marshal(out)
	if err != nil {
		return result
	}
	return b
}

// withCapabilities adds the tasks to a server's initialize or
// server/discover result: the extension, and (initialize of a revision
// before 2026-07-28) the 2025-11-25 tasks capability. It returns result
// unchanged when it cannot read it.
func withCapabilities(result json.RawMessage, legacy bool) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil {
		return result
	}
	var caps map[string]any
	if raw, ok := m["capabilities"]; ok && json.Unmarshal(raw, &caps) != nil {
		return result
	}
	if caps == nil {
		caps = map[string]any{}
	}
	ext, _ := caps["extensions"].(map[string]any)
	if ext == nil {
		ext = map[string]any{}
	}
	ext[TasksExtension] = map[string]any{}
	caps["extensions"] = ext
	if legacy {
		caps["tasks"] = map[string]any{"list": map[string]any{}, "cancel": map[string]any{},
			"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}
	}
	b, err := json.Marshal(caps)
	if err != nil {
		return result
	}
	m["capabilities"] = b
	out, err := json.Marshal(m)
	if err != nil {
		return result
	}
	return out
}

// pendingKind is what a connection waits to rewrite in an answer.
type pendingKind int

const (
	pendingCall pendingKind = iota
	pendingInit
	pendingDiscover
)

type pending struct {
	kind pendingKind
	tool string
	d    dialect
}

// taskConn is one connection's side of the tasks: it notes the requests
// whose answers it rewrites (task-eligible calls, initialize,
// server/discover) and answers tasks/* requests on goroutines of its own,
// which close ends and waits for.
type taskConn struct {
	t     *Tasks
	write func(data []byte) error

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex // protects pending, peer and closed
	pending map[jsonrpc.ID]pending
	peer    peer
	closed  bool
}

func newTaskConn(t *Tasks, write func([]byte) error, role string) *taskConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &taskConn{t: t, write: write, ctx: ctx, cancel: cancel, pending: map[jsonrpc.ID]pending{}, peer: peer{role: role}}
}

// incoming looks at a request on its way to the go-sdk; it reports true
// when the request was a tasks/* request, answered here.
func (c *taskConn) incoming(req *jsonrpc.Request) bool {
	switch {
	case strings.HasPrefix(req.Method, "tasks/"):
		if !req.IsCall() {
			return true // a notification asks for no answer
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return true
		}
		pe := c.peer
		c.wg.Add(1)
		c.mu.Unlock()
		params := req.Params
		go func() {
			defer c.wg.Done()
			res, e := c.t.Serve(c.ctx, req.Method, params, pe)
			if data, err := encodeAnswer(req.ID, res, e); err == nil {
				_ = c.write(data)
			}
		}()
		return true
	case !req.IsCall():
		return false
	case req.Method == "initialize":
		var p taskParams
		_ = json.Unmarshal(req.Params, &p)
		c.mu.Lock()
		_, ext := p.Capabilities.Extensions[TasksExtension]
		c.peer.ext = ext
		if p.ClientInfo != nil {
			c.peer.client = harness.Client{Name: p.ClientInfo.Name, Version: p.ClientInfo.Version}
		}
		c.pending[req.ID] = pending{kind: pendingInit}
		c.mu.Unlock()
	case req.Method == "server/discover":
		c.mu.Lock()
		c.pending[req.ID] = pending{kind: pendingDiscover}
		c.mu.Unlock()
	case req.Method == "tools/call":
		c.mu.Lock()
		ext := c.peer.ext
		c.mu.Unlock()
		if !ext && !mayConcernTasks(req.Params) {
			return false // a plain call: no decode of its arguments
		}
		var p taskParams
		if json.Unmarshal(req.Params, &p) != nil {
			return false
		}
		c.mu.Lock()
		if d := callDialect(&p, c.peer); d != noTasks {
			c.pending[req.ID] = pending{kind: pendingCall, tool: p.Name, d: d}
		}
		c.mu.Unlock()
	}
	return false
}

// outgoing rewrites the go-sdk's answer to a request incoming noted.
func (c *taskConn) outgoing(ctx context.Context, msg jsonrpc.Message) jsonrpc.Message {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || !resp.ID.IsValid() {
		return msg
	}
	c.mu.Lock()
	p, ok := c.pending[resp.ID]
	if ok {
		delete(c.pending, resp.ID)
	}
	pe := c.peer
	c.mu.Unlock()
	if !ok || resp.Error != nil || len(resp.Result) == 0 {
		return msg
	}
	result, protocol := c.t.answer(ctx, p, resp.Result, pe)
	if p.kind == pendingInit {
		c.mu.Lock()
		c.peer.protocol = protocol
		c.mu.Unlock()
	}
	return &jsonrpc.Response{ID: resp.ID, Result: result, Extra: resp.Extra}
}

// answer rewrites the go-sdk's result of a request noted as p: initialize
// and server/discover gain the tasks' capabilities (it also returns the
// protocol an initialize settled on), a task-eligible call becomes a task.
func (t *Tasks) answer(ctx context.Context, p pending, result json.RawMessage, pe peer) (json.RawMessage, string) {
	switch p.kind {
	case pendingInit:
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(result, &r)
		return withCapabilities(result, r.ProtocolVersion < protocol2026), r.ProtocolVersion
	case pendingDiscover:
		return withCapabilities(result, false), ""
	default:
		return t.handle(ctx, p.tool, p.d, result, pe), ""
	}
}

// close ends the tasks/* requests still running (tasks/result waiting
// for a job) and waits for them.
func (c *taskConn) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// encodeAnswer is the JSON-RPC answer to request id: res, or e.
func encodeAnswer(id jsonrpc.ID, res any, e *jsonrpc.Error) ([]byte, error) {
	if e != nil {
		return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: e})
	}
	b, err := jsonx.Marshal(res)
	if err != nil {
		return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: rpcError(jsonrpc.CodeInternalError, "encode: %v", err)})
	}
	return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: b})
}

// mayConcernTasks reports whether a request's bytes can concern tasks:
// a tasks/* request, an initialize or server/discover (their answers
// gain the tasks' capabilities), or a call that asks for a task
// (params.task) or declares the extension (its id in _meta). Each names
// "task", "initialize" or "server/discover"; every other request, the
// plain calls of the hot path, passes on without being decoded here. (A
// member name written with \u escapes is not seen: such a call is
// answered plainly, not as a task.)
func mayConcernTasks(b []byte) bool {
	return bytes.Contains(b, []byte("task")) || bytes.Contains(b, []byte("initialize")) || bytes.Contains(b, []byte("server/discover"))
}

// maxTaskBody bounds the body WithTasks reads to look at a request; a
// larger one goes to next unread.
const maxTaskBody = 4 << 20

// WithTasks serves MCP tasks in front of next, an MCP streamable HTTP
// handler: a POSTed tasks/* request is answered here (application/json),
// and the answers to initialize, server/discover and task-eligible
// tools/call requests are rewritten on their way out (the tasks'
// capabilities; a task handle). Everything else goes to next untouched.
// A rewritten answer is buffered, so the progress notifications of such a
// call arrive with its answer.
func WithTasks(next http.Handler, t *Tasks) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || t == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxTaskBody+1))
		if err != nil {
			http.Error(w, "read request: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		if len(body) > maxTaskBody || !mayConcernTasks(body) {
			next.ServeHTTP(w, r)
			return
		}
		msg, err := jsonrpc.DecodeMessage(body)
		req, ok := msg.(*jsonrpc.Request)
		if err != nil || !ok || !req.IsCall() {
			next.ServeHTTP(w, r)
			return
		}
		o, err := OptionsFromRequest(r)
		if err != nil {
			next.ServeHTTP(w, r) // the MCP handler answers the bad options
			return
		}
		pe := peer{protocol: r.Header.Get("Mcp-Protocol-Version"), role: o.RoleName()}
		var p pending
		switch req.Method {
		case "initialize":
			p.kind = pendingInit
		case "server/discover":
			p.kind = pendingDiscover
		case "tools/call":
			var tp taskParams
			if json.Unmarshal(req.Params, &tp) != nil {
				next.ServeHTTP(w, r)
				return
			}
			if p.d = callDialect(&tp, pe); p.d == noTasks {
				next.ServeHTTP(w, r)
				return
			}
			p.kind, p.tool = pendingCall, tp.Name
		default:
			if !strings.HasPrefix(req.Method, "tasks/") {
				next.ServeHTTP(w, r)
				return
			}
			res, e := t.Serve(r.Context(), req.Method, req.Params, pe)
			data, err := encodeAnswer(req.ID, res, e)
			if err != nil {
				http.Error(w, "encode: "+err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(data)
			return
		}
		rec := &bufferedResponse{header: http.Header{}, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		rewrite := func(resp *jsonrpc.Response) *jsonrpc.Response {
			if resp.ID != req.ID || resp.Error != nil || len(resp.Result) == 0 {
				return resp
			}
			result, _ := t.answer(r.Context(), p, resp.Result, pe)
			return &jsonrpc.Response{ID: resp.ID, Result: result}
		}
		out := rec.body.Bytes()
		if ct := rec.header.Get("Content-Type"); strings.HasPrefix(ct, "text/event-stream") {
			out = rewriteSSE(out, rewrite)
		} else if strings.HasPrefix(ct, "application/json") {
			out = rewriteJSON(out, rewrite)
		}
		for k, v := range rec.header {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.code)
		_, _ = w.Write(out)
	})
}

// bufferedResponse holds an answer of next for WithTasks to rewrite.
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
	wrote  bool
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(code int) {
	if !b.wrote {
		b.code, b.wrote = code, true
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.wrote = true
	return b.body.Write(p)
}

// Flush implements http.Flusher: the answer is written whole at the end.
func (b *bufferedResponse) Flush() {}

// rewriteJSON rewrites the response in a JSON body.
func rewriteJSON(body []byte, f func(*jsonrpc.Response) *jsonrpc.Response) []byte {
	msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(body))
	resp, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok {
		return body
	}
	out, err := jsonrpc.EncodeMessage(f(resp))
	if err != nil {
		return body
	}
	return out
}

// rewriteSSE rewrites the responses in the data lines of an event stream.
func rewriteSSE(body []byte, f func(*jsonrpc.Response) *jsonrpc.Response) []byte {
	lines := bytes.SplitAfter(body, []byte("\n"))
	var out bytes.Buffer
	for _, line := range lines {
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			out.Write(line)
			continue
		}
		trimmed := bytes.TrimSpace(data)
		msg, err := jsonrpc.DecodeMessage(trimmed)
		resp, isResp := msg.(*jsonrpc.Response)
		if err != nil || !isResp {
			out.Write(line)
			continue
		}
		enc, err := jsonrpc.EncodeMessage(f(resp))
		if err != nil {
			out.Write(line)
			continue
		}
		out.WriteString("data: ")
		out.Write(enc)
		out.WriteString("\n")
	}
	return out.Bytes()
}
