// The official MCP TypeScript client (@modelcontextprotocol/client) with the
// official Tasks extension package (@modelcontextprotocol/ext-tasks), both
// pinned in package.json, following a harnessd job as an MCP task across a
// restart of the daemon. Run by cmd/harnessd's TestNodeTaskSurvivesKill9 in
// two phases, with the environment of client.mjs (HARNESSD_MCP_TRANSPORT,
// HARNESSD_BIN, HARNESSD_DATA_DIR, HARNESSD_MCP_URL, HARNESSD_TOKEN,
// HARNESSD_REPO_ID, HARNESSD_PROTOCOL) and:
//
//   HARNESSD_TASK_PHASE  start | follow
//   HARNESSD_TASK_REF    (follow) the reference phase start printed
//
// start: connects pinned to HARNESSD_PROTOCOL (2026-07-28), opens an
// ext-tasks session, calls job_start (a job of a few seconds that re-runs
// after a restart: retry.max 1) requiring a task, hands the task off (its
// serialized reference, without cancelling it) and prints
// {"task_id", "status", "reference"}.
//
// follow (a new process, after the daemon was killed and restarted):
// resumes the task from its reference with ext-tasks, lets it settle (ext-tasks
// polls tasks/get as the server's pollIntervalMs says) and prints
// {"task_id", "status", "result", "observed"}: the terminal outcome, the tool
// result, and the statuses seen on the way.
//
// Anything unexpected exits non-zero with the reason.
//
// ext-tasks needs, for a 2026-07-28 Tasks server, a raw request path (the
// SDK client's codecs reject resultType "task") owned by the host:
// rawDispatch, a request coordinator that owns request ids and response
// matching, and v2RequestFraming, the values the client was set up with.
// Coordinator below is that: it wraps the SDK's transport, sends the framed
// requests itself and takes their answers before the Client sees them.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { createTaskSessionEndpointId, createTaskSessionFromClient } from '@modelcontextprotocol/ext-tasks/client';

const env = process.env;
const need = (name) => {
    const v = env[name];
    if (!v) throw new Error(`${name} is not set`);
    return v;
};

const clientInfo = { name: 'official-node-client-tasks', version: '2.4.0' };

function transport() {
    switch (need('HARNESSD_MCP_TRANSPORT')) {
        case 'stdio':
            return new StdioClientTransport({
                command: need('HARNESSD_BIN'),
                args: ['mcp', '--data-dir', need('HARNESSD_DATA_DIR'), '--log-level', 'warn'],
                env: { ...getDefaultEnvironment(), ...pick(env, 'TMPDIR', 'HARNESSD_TOOLSETS') },
                stderr: 'inherit',
            });
        case 'http':
            return new StreamableHTTPClientTransport(new URL(need('HARNESSD_MCP_URL')), {
                requestInit: { headers: { Authorization: `Bearer ${need('HARNESSD_TOKEN')}` } },
            });
        default:
            throw new Error(`HARNESSD_MCP_TRANSPORT=${env.HARNESSD_MCP_TRANSPORT}: want stdio or http`);
    }
}

function pick(from, ...names) {
    const out = {};
    for (const n of names) if (from[n] !== undefined) out[n] = from[n];
    return out;
}

// Coordinator is a Transport for the SDK Client that also dispatches raw
// JSON-RPC requests (ext-tasks' rawDispatch): it numbers them in a space of
// its own ("ext-tasks-N"), sends them through the wrapped transport, and
// keeps their responses from the Client, which would reject them.
class Coordinator {
    constructor(inner) {
        this.inner = inner;
        this.pending = new Map();
        this.next = 0;
        inner.onmessage = (msg, extra) => {
            const p = msg && msg.id !== undefined && msg.method === undefined ? this.pending.get(msg.id) : undefined;
            if (p === undefined) {
                this.onmessage?.(msg, extra);
                return;
            }
            this.pending.delete(msg.id);
            if (msg.error !== undefined) p.resolve({ kind: 'error', error: msg.error });
            else p.resolve({ kind: 'result', result: msg.result });
        };
        inner.onclose = () => {
            const err = new Error('transport closed');
            for (const p of this.pending.values()) p.reject(err);
            this.pending.clear();
            this.onclose?.();
        };
        inner.onerror = (err) => this.onerror?.(err);
    }

    start() {
        return this.inner.start();
    }
    send(message, options) {
        return this.inner.send(message, options);
    }
    close() {
        return this.inner.close();
    }
    get sessionId() {
        return this.inner.sessionId;
    }
    get hasPerRequestStream() {
        return this.inner.hasPerRequestStream;
    }
    setProtocolVersion(v) {
        this.inner.setProtocolVersion?.(v);
    }
    setSupportedProtocolVersions(v) {
        this.inner.setSupportedProtocolVersions?.(v);
    }

    // dispatch sends request ({method, params}, framed by ext-tasks) and
    // resolves with its JSON-RPC response as ext-tasks wants it.
    dispatch(request, options = {}) {
        const id = `ext-tasks-${++this.next}`;
        const signal = options.signal;
        const timeoutMs = options.context?.requestTimeoutMs ?? 60_000;
        return new Promise((resolve, reject) => {
            let timer;
            const done = () => {
                clearTimeout(timer);
                signal?.removeEventListener('abort', onAbort);
                this.pending.delete(id);
            };
            const onAbort = () => {
                done();
                reject(signal.reason ?? new Error('aborted'));
            };
            if (signal?.aborted) return onAbort();
            signal?.addEventListener('abort', onAbort, { once: true });
            timer = setTimeout(() => {
                done();
                reject(new Error(`${request.method}: no answer in ${timeoutMs} ms`));
            }, timeoutMs);
            this.pending.set(id, {
                resolve: (v) => (done(), resolve(v)),
                reject: (e) => (done(), reject(e)),
            });
            const headers = options.context?.headers;
            this.inner.send({ jsonrpc: '2.0', id, ...request }, headers ? { headers } : undefined).catch((e) => {
                done();
                reject(e);
            });
        });
    }
}

async function connect(pin) {
    const coordinator = new Coordinator(transport());
    const client = new Client(clientInfo, { versionNegotiation: { mode: { pin } } });
    await client.connect(coordinator);
    if (client.getNegotiatedProtocolVersion() !== pin) {
        throw new Error(`negotiated ${client.getNegotiatedProtocolVersion()}, want ${pin}`);
    }
    // The endpoint: what a task reference is valid against. Stable across a
    // restart of the daemon (same data dir, same URL).
    const target = env.HARNESSD_MCP_TRANSPORT === 'http' ? need('HARNESSD_MCP_URL') : need('HARNESSD_DATA_DIR');
    const endpointId = await createTaskSessionEndpointId('harnessd-e2e', { transport: env.HARNESSD_MCP_TRANSPORT, target });
    const session = createTaskSessionFromClient(client, {
        endpointId,
        rawDispatch: (request, options) => coordinator.dispatch(request, options),
        v2RequestFraming: { protocolVersion: pin, clientInfo, clientCapabilities: {} },
        onError: (err) => process.stderr.write(`nodeclient task: background: ${err?.stack ?? err}\n`),
    });
    if (session.capabilities.execution !== true) {
        throw new Error(`the server offers no task execution: ${JSON.stringify(session.capabilities)}`);
    }
    return { client, session };
}

async function start(pin) {
    const { client, session } = await connect(pin);
    let handedOff = false;
    try {
        const execution = await session.callTool(
            'job_start',
            {
                repo_id: need('HARNESSD_REPO_ID'),
                // Long enough that the job still runs when the Go test,
                // after this process exited, kills the daemon (node's own
                // start and exit take seconds on a loaded machine).
                argv: ['sh', '-c', 'sleep 10; echo done'],
                request_id: `node-task-${env.HARNESSD_MCP_TRANSPORT}`,
                retry: { max: 1 },
            },
            { task: { preference: 'require' } },
        );
        if (execution.kind !== 'task') throw new Error(`job_start answered ${execution.kind}, want a task`);
        let reference;
        await execution.handoff((ref) => {
            reference = ref;
        });
        handedOff = true;
        const out = { task_id: execution.handle.taskId, reference };
        process.stdout.write(JSON.stringify(out) + '\n');
    } finally {
        // ext-tasks' session.close() closes the executions it still lists,
        // and closing an unsettled one cancels its task: a handed-off task
        // may still be listed for a moment after handoff() resolved, so
        // the session is left to end with the connection.
        if (!handedOff) await session.close();
        await client.close();
    }
}

async function follow(pin) {
    const reference = JSON.parse(need('HARNESSD_TASK_REF'));
    const { client, session } = await connect(pin);
    try {
        const execution = await session.resumeTask(reference);
        const observed = [];
        const { outcome } = await execution.settle({
            onEvent: (event) => {
                const status = event.type === 'task' ? event.task.status : `outcome:${event.outcome.status}`;
                if (observed.at(-1) !== status) observed.push(status);
            },
        });
        const out = { task_id: reference.taskId, status: outcome.status, observed };
        if (outcome.status === 'completed') out.result = outcome.result;
        if (outcome.status === 'failed') out.error = { message: outcome.error.message, code: outcome.error.code, data: outcome.error.data };
        process.stdout.write(JSON.stringify(out) + '\n');
    } finally {
        await session.close();
        await client.close();
    }
}

async function main() {
    const pin = need('HARNESSD_PROTOCOL');
    switch (need('HARNESSD_TASK_PHASE')) {
        case 'start':
            return start(pin);
        case 'follow':
            return follow(pin);
        default:
            throw new Error(`HARNESSD_TASK_PHASE=${env.HARNESSD_TASK_PHASE}: want start or follow`);
    }
}

main().catch((err) => {
    process.stderr.write(`nodeclient task: ${err?.stack ?? err}\n`);
    process.exit(1);
});
