"""A real vLLM server for the served-model tests, a tiny model it can serve, and a proxy that injects faults.

The server runs from its own environment (`make env-served` builds `.venv-served`); `NUMCOOK_SERVED_PYTHON`
names its interpreter. Nothing here is a mock: requests go over TCP to vLLM's OpenAI-compatible server."""
import hashlib, http.client, http.server, json, os, signal, socket, socketserver, subprocess, threading, time, urllib.request
from pathlib import Path
import torch
from numcook.lm.testing import toy_chat_tokenizer, toy_model

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = '0123456789, '


def served_python():
    "The interpreter of the environment that has vLLM and lm-eval, or None."
    p = Path(os.environ.get('NUMCOOK_SERVED_PYTHON', ROOT / '.venv-served' / 'bin' / 'python'))
    p = p if p.is_absolute() else ROOT / p   # the tests run commands from other folders
    return p if p.exists() else None


def answer_model(seed=1, eos=300.0):
    """A tiny random Qwen2 (hidden 128, 2 heads, 1 KV head) and the byte-level ChatML tokenizer, whose weights
    let it write only digits, commas, spaces and its end token: a plain transformers model a server can load.

    Residual dimension 0 holds a constant (every embedding has 3 there and no layer writes to it), so after the
    final norm it is a positive number at every position; the LM head's column 0 turns it into a large negative
    logit for every other token and a positive one for the end token (`eos` sets how soon answers end)."""
    tok = toy_chat_tokenizer()
    m = toy_model('qwen2', vocab_size=len(tok), hidden=128, layers=2, heads=2, kv_heads=1, init_range=0.5, seed=seed,
                  eos_token_id=tok.eos_token_id)
    with torch.no_grad():
        m.model.embed_tokens.weight[:, 0] = 3.0
        for layer in m.model.layers:
            layer.self_attn.o_proj.weight[0, :] = 0
            layer.mlp.down_proj.weight[0, :] = 0
        m.lm_head.weight[:, 0] = -1e4
        for c in ALLOWED: m.lm_head.weight[tok.convert_tokens_to_ids(c if c != ' ' else 'Ġ'), 0] = 0
        m.lm_head.weight[tok.eos_token_id, 0] = eos
    m.generation_config.eos_token_id = tok.eos_token_id
    return m, tok


def free_port():
    "A TCP port on 127.0.0.1 nobody listens on now."
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0)); return s.getsockname()[1]


class VllmServer:
    "vLLM's OpenAI-compatible server on 127.0.0.1 serving `model_dir` (under its path as model name), in its own process group."
    def __init__(self, model_dir, log_path, api_key, python=None, max_model_len=2048, startup_timeout=900):
        self.model_dir, self.log_path, self.python = str(model_dir), Path(log_path), python or served_python()
        self.api_key = api_key
        self.max_model_len, self.startup_timeout, self.port, self.proc = max_model_len, startup_timeout, free_port(), None

    @property
    def base_url(self): return f'http://127.0.0.1:{self.port}/v1'

    def start(self):
        env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE='1', VLLM_CPU_OMP_THREADS_BIND='nobind', OMP_NUM_THREADS='1',
                   HF_HUB_OFFLINE='1', TRANSFORMERS_OFFLINE='1', VLLM_NO_USAGE_STATS='1', DO_NOT_TRACK='1')
        env.pop('PYTHONHASHSEED', None)
        cmd = [str(self.python), '-m', 'vllm.entrypoints.openai.api_server', '--model', self.model_dir,
               '--host', '127.0.0.1', '--port', str(self.port), '--dtype', 'float32',
               '--max-model-len', str(self.max_model_len), '--max-logprobs', '5', '--seed', '0']
        env['VLLM_API_KEY'] = self.api_key   # every request must carry it (the key is not on the command line)
        self._log = self.log_path.open('w')
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        t0 = time.time()
        while time.time() - t0 < self.startup_timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f'vLLM exited with {self.proc.returncode}; log: {self.log_path}')
            try:
                req = urllib.request.Request(self.base_url + '/models', headers={'Authorization': f'Bearer {self.api_key}'})
                with urllib.request.urlopen(req, timeout=5) as r:
                    if json.loads(r.read()).get('data'): return self
            except OSError: pass
            time.sleep(2)
        self.stop()
        raise RuntimeError(f'vLLM not ready after {self.startup_timeout} s; log: {self.log_path}')

    def stop(self):
        "Stop the server and every process it started (its process group)."
        if self.proc is None: return
        if self.proc.poll() is None:
            try: os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError: pass
            try: self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL); self.proc.wait(30)
        self._log.close(); self.proc = None


class FaultProxy:
    """An HTTP proxy in front of `upstream` that meets some requests with a fault instead of forwarding them.

    Each request body gets a plan, `plans[sha256(body) % len(plans)]`: its k-th arrival meets the plan's k-th
    action, and arrivals beyond the plan are forwarded. Actions: 'ok' (forward), 'delay' (forward after `delay`
    seconds), '429' and '500' (that status, not forwarded), 'truncate' (forward, then send only the first half
    of the answer's JSON, with a matching length), 'drop' (close the connection without an answer), 'stall'
    (answer nothing for `stall` seconds, longer than the client waits, then close). The plans depend only on the
    bodies, so a run meets the same faults whatever the order of its concurrent requests. It counts the actions
    taken and the most requests held at once that a client still waited on: a request stops counting just before
    its answer (or hang-up) goes out, or once its client has closed the connection (gave up on a stall or a slow
    answer). Each arrival first looks for such closed connections: a client closes one before it sends the retry."""
    def __init__(self, upstream, plans, delay=0.3, stall=5.0):
        self.upstream, self.plans, self.delay, self.stall = upstream.rstrip('/'), [list(p) for p in plans], delay, stall
        self.counts, self.arrivals, self.held, self.max_in_flight = {}, {}, set(), 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'
            def log_message(self, *a): pass
            def do_GET(self): self._handle(None)
            def _headers(self): return {k: v for k, v in self.headers.items() if k.lower() in ('authorization', 'content-type')}
            def do_POST(self): self._handle(self.rfile.read(int(self.headers.get('Content-Length', 0))))
            def _handle(self, body):
                action = proxy._action(body)
                with proxy._lock:
                    proxy.held = {h for h in proxy.held if not h._client_left()} | {self}
                    proxy.max_in_flight = max(proxy.max_in_flight, len(proxy.held))
                try: self._act(action, body)
                finally: self._release()
            def _release(self):
                "This request stops counting: its answer is about to go out."
                with proxy._lock: proxy.held.discard(self)
            def _client_left(self):
                "Whether the client has closed its end of this request's connection."
                try: return self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b''
                except BlockingIOError: return False
                except OSError: return True
            def _act(self, action, body):
                if action in ('drop', 'stall'):
                    if action == 'stall': time.sleep(proxy.stall)
                    self._release(); self.close_connection = True; self.connection.shutdown(socket.SHUT_RDWR); return
                if action in ('429', '500'):
                    msg = json.dumps({'error': {'message': f'injected {action}'}}).encode()
                    self._release(); self.send_response(int(action)); self.send_header('Content-Type', 'application/json')
                    if action == '429': self.send_header('Retry-After', '0')
                    self.send_header('Content-Length', str(len(msg))); self.end_headers(); self.wfile.write(msg); return
                if action == 'delay': time.sleep(proxy.delay)
                status, data = proxy._forward(self.command, self.path, body, self._headers())
                if action == 'truncate': data = data[:len(data) // 2]
                self._release(); self.send_response(status); self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data))); self.end_headers(); self.wfile.write(data)
                if action == 'truncate': self.close_connection = True

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
        self.server = Server(('127.0.0.1', 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self): return f'http://127.0.0.1:{self.port}/v1'

    def _action(self, body):
        "The action for this arrival of `body` (GET requests, which carry none, are always forwarded)."
        if body is None: return 'ok'
        h = hashlib.sha256(body).hexdigest()
        with self._lock:
            k = self.arrivals[h] = self.arrivals.get(h, -1) + 1
            plan = self.plans[int(h, 16) % len(self.plans)]
            action = plan[k] if k < len(plan) else 'ok'
            self.counts[action] = self.counts.get(action, 0) + 1
        return action

    def _forward(self, method, path, body, headers):
        u = urllib.request.urlsplit(self.upstream)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
        try:
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse(); return r.status, r.read()
        finally: conn.close()

    def __enter__(self): self.thread.start(); return self
    def __exit__(self, *a): self.server.shutdown(); self.server.server_close()
