// The official MCP TypeScript client (@modelcontextprotocol/client, pinned
// in package.json) against harnessd, pinned to one protocol revision. Run
// by cmd/harnessd's TestOfficialNodeClient; it reads its target from the
// environment:
//
//   HARNESSD_MCP_TRANSPORT  stdio | http
//   HARNESSD_BIN            (stdio) the harnessd binary: `harnessd mcp --data-dir HARNESSD_DATA_DIR`
//   HARNESSD_DATA_DIR       (stdio) the daemon's data dir
//   HARNESSD_MCP_URL        (http) the daemon's /mcp URL
//   HARNESSD_TOKEN          (http) the bearer token of --listen
//   HARNESSD_REPO_ID        a registered repository holding README.md
//   HARNESSD_PROTOCOL       the revision to pin (2026-07-28)
//
// It connects, discovers, lists the tools, reads README.md, patches it,
// reads it back and provokes a tool error, then prints one JSON line of
// what it saw. Anything unexpected exits non-zero with the reason.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';

const env = process.env;
const need = (name) => {
    const v = env[name];
    if (!v) throw new Error(`${name} is not set`);
    return v;
};

function transport() {
    switch (need('HARNESSD_MCP_TRANSPORT')) {
        case 'stdio':
            return new StdioClientTransport({
                command: need('HARNESSD_BIN'),
                args: ['mcp', '--data-dir', need('HARNESSD_DATA_DIR'), '--log-level', 'warn'],
                env: { ...getDefaultEnvironment(), ...pick(env, 'TMPDIR') },
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

// The text of a result: its text blocks, then its structured content.
function textOf(res) {
    const blocks = (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text);
    return blocks.join('\n') + JSON.stringify(res.structuredContent ?? {});
}

async function call(client, name, args) {
    const res = await client.callTool({ name, arguments: args });
    if (res.isError) throw new Error(`${name}: ${textOf(res)}`);
    return res;
}

async function main() {
    const pin = need('HARNESSD_PROTOCOL');
    const repoID = need('HARNESSD_REPO_ID');
    const client = new Client({ name: 'official-node-client', version: '2.4.0' }, { versionNegotiation: { mode: { pin } } });
    await client.connect(transport());
    const seen = {
        negotiated: client.getNegotiatedProtocolVersion(),
        era: client.getProtocolEra(),
        server: client.getServerVersion()?.name,
    };
    try {
        const disc = await client.discover();
        seen.supported = disc.supportedVersions;
        seen.instructions = (disc.instructions ?? '').length;

        const { tools } = await client.listTools();
        seen.tools = tools.map((t) => t.name);

        const before = await call(client, 'read_file', { repo_id: repoID, path: 'README.md' });
        seen.read = textOf(before).includes('hello');

        await call(client, 'apply_patch', {
            repo_id: repoID,
            request_id: `node-${pin}-${env.HARNESSD_MCP_TRANSPORT}`,
            operations: [{ op: 'replace', path: 'README.md', old_text: 'hello', new_text: `hello from node over ${env.HARNESSD_MCP_TRANSPORT}` }],
        });
        const after = await call(client, 'read_file', { repo_id: repoID, path: 'README.md' });
        seen.patched = textOf(after).includes(`hello from node over ${env.HARNESSD_MCP_TRANSPORT}`);

        const bad = await client.callTool({ name: 'read_file', arguments: { repo_id: 'no-such-repo', path: 'README.md' } });
        seen.error_is_error = bad.isError === true;
        seen.error_code = bad.structuredContent?.error?.code;
    } finally {
        await client.close();
    }
    process.stdout.write(JSON.stringify(seen) + '\n');
}

main().catch((err) => {
    process.stderr.write(`nodeclient: ${err?.stack ?? err}\n`);
    process.exit(1);
});
