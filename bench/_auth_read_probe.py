import asyncio, os, sys, time, uvloop, tempfile, subprocess
from pathlib import Path
sys.path.insert(0, "bench")
from _support import pg_database, bench_env, platform_credentials
async def run(url, cid):
    from platpay.db.database import Database
    from platpay.auth import repository
    db = Database(url)
    for _ in range(300): await repository.credential(db, cid)
    t = time.process_time()
    for _ in range(5000): row = await repository.credential(db, cid)
    print(url.split(":")[0], (time.process_time()-t)/5000*1e6, "us per credential read", file=sys.stderr)
    sql, args, results = repository.CREDENTIAL.args(db.engine.dialect, {"client_id": cid})
    print(sql, file=sys.stderr)
    await db.dispose()
with tempfile.TemporaryDirectory() as tmp:
    for backend in sys.argv[1:]:
        import contextlib
        cm = pg_database() if backend == "postgres" else contextlib.nullcontext(f"sqlite+aiosqlite:///{tmp}/p.db")
        with cm as url:
            env = bench_env(PLATPAY_DATABASE_URL=url, PLATPAY_VAR_DIR=tmp + "/var")
            cid, secret = platform_credentials(env, cwd=Path(tmp), migrate=True)
            uvloop.run(run(url, cid))
