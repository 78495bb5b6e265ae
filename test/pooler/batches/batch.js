// Runs the cases of test/pooler/batches/README.md with node-postgres (shapes
// "multi" and "each"; pg 8.13 has no batch and no pipelining: a query sent
// without awaiting the previous one waits in the client's queue).
'use strict'
const { Client } = require('pg')

function outcome(err) {
  if (!err) return 'ok'
  return err.code || 'error:' + String(err.message).replace(/ /g, '_')
}

async function runCase(conninfo, load, spec) {
  const [shape, ...stmts] = spec.split('\n')
  const client = new Client({ connectionString: conninfo })
  await client.connect()
  // pg rejects a query at its ErrorResponse, before the ReadyForQuery that ends
  // it: closing the connection then is a disconnect in the middle of a query,
  // for which a PgBouncer closes the server connection too (and the next case
  // would get a new one, without the library loaded). So after an error the
  // client waits for the server to be ready, with a query queued behind it.
  let failed = false
  try {
    if (load) await client.query("LOAD 'fencing'")
    const run = async (sql) => {
      try {
        await client.query(sql)
        return 'ok'
      } catch (err) {
        failed = true
        return outcome(err)
      }
    }
    if (shape === 'multi') return await run(stmts.join('; '))
    if (shape === 'each') {
      const got = []
      for (const s of stmts) got.push(await run(s))
      return got.join(' ')
    }
    throw new Error(`unknown shape ${shape}`)
  } finally {
    if (failed) await client.query('SELECT 1')
    await client.end()
  }
}

async function main() {
  const [conninfo, load, ...cases] = process.argv.slice(2)
  if (load === undefined) {
    console.error('usage: node batch.js CONNINFO LOAD CASE...')
    process.exit(2)
  }
  for (const spec of cases) console.log(await runCase(conninfo, load === '1', spec))
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
