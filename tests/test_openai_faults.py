"""The OpenAI-compatible backend against a faulty server: a loopback HTTP server in this process (a thread that stops
by itself) misbehaves in one way per test, and `numcook eval ... --backend openai` must answer with one line, or
count what it could not use, never a traceback, a silent score or a wait without end. (Beside tests/test_cli_faults.py.)"""
import http.server, json, threading, time
from pathlib import Path
import pytest
from numcook.cli import main
from numcook.core.files import read_jsonl
from numcook.lm.testing import toy_chat_tokenizer

LIFETIME = 60.0   # seconds a server lives at most, whatever the test does


class Faulty(http.server.BaseHTTPRequestHandler):
    "Answers /v1/models and /v1/(chat/)completions the way the server's `fault` says; counts what it sent."
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def _send(self, obj, status=200):
        body = json.dumps(obj).encode()
        self.send_response(status); self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_GET(self):
        srv = self.server
        if srv.fault == 'models_list': return self._send([{'id': 'tiny', 'object': 'model'}])
        self._send({'object': 'list', 'data': [{'id': 'tiny', 'object': 'model', 'owned_by': 'test'}]})
    def do_POST(self):
        srv = self.server
        self.rfile.read(int(self.headers['Content-Length']))
        with srv.lock: srv.posts += 1; n = srv.posts
        chat = self.path.endswith('/chat/completions')
        if srv.fault == 'hang':                     # take the request, answer nothing (until the test ends)
            srv.release.wait(LIFETIME); return
        if srv.fault == 'no_choices': return self._send({'id': f'cmpl-{n}', 'object': 'text_completion', 'model': 'tiny'})
        if srv.fault == 'list_body': return self._send([{'text': '7', 'finish_reason': 'stop'}])
        text = None if srv.fault == 'null_text' and n % 2 else '7'
        if text is None:
            with srv.lock: srv.nulls += 1
        choice = {'index': 0, 'finish_reason': 'stop', **({'message': {'role': 'assistant', 'content': text}} if chat else {'text': text})}
        self._send({'id': f'cmpl-{n}', 'choices': [choice]})


def serving(handler=Faulty):
    "A server with request `handler` (a `Faulty`), serving until the caller is done or LIFETIME passes, whichever comes first."
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    srv.daemon_threads, srv.timeout = True, 0.1
    srv.fault, srv.posts, srv.nulls, srv.sent, srv.lock, srv.release, stop = None, 0, 0, 0, threading.Lock(), threading.Event(), threading.Event()
    end = time.monotonic() + LIFETIME
    def serve():
        while not stop.is_set() and time.monotonic() < end: srv.handle_request()
    t = threading.Thread(target=serve, daemon=True); t.start()
    srv.url = f'http://127.0.0.1:{srv.server_address[1]}/v1'
    yield srv
    stop.set(); srv.release.set(); t.join(5); srv.server_close()


@pytest.fixture
def server():
    "Start a faulty server for one test."
    yield from serving()


@pytest.fixture(scope='module')
def tok_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp('tok'); toy_chat_tokenizer().save_pretrained(d); return d


def argv(benchmark, srv, tok, out, *more):
    "`numcook eval BENCHMARK` through the server, on a handful of samples."
    task = {'nupa': ['--tasks', 'add_integer', '--lengths', '1', '--n', '4'],
            'gsm': ['--subset', 'medium', '--ops', '2', '--per-op', '4'],
            'zeh': ['--family', 'parity', '--max-size', '2', '--stop', 'all', '--strategy', 'batched']}[benchmark]
    return ['eval', benchmark, '--model', 'tiny', '--backend', 'openai', '--base-url', srv.url, '--tokenizer', str(tok),
            '--max-concurrency', '1', *task, *more, '--out', str(out)]


def one_line_error(capsys, args):
    rc = main(args)
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.strip()]
    assert rc == 2 and len(lines) == 1 and 'Traceback' not in err, err[-2000:]
    return lines[0]


@pytest.mark.parametrize('fault,msg', [('no_choices', "answered a JSON object with keys 'id', 'object', 'model' without 'choices'"),
                                       ('list_body', "answered a JSON list without 'choices'"),
                                       ('models_list', 'answered a JSON list, not a list of models')])
@pytest.mark.parametrize('chat', [False, True])
def test_a_malformed_answer_is_one_line(server, tok_dir, tmp_path, capsys, fault, msg, chat):
    server.fault = fault
    line = one_line_error(capsys, argv('nupa', server, tok_dir, tmp_path / 'e', '--apply-chat-template' if chat else '--no-chat-template'))
    assert msg in line and server.url in line, line
    assert server.posts <= 1            # not asked again, and no request after the first failure is sent (4 samples, one at a time), however busy the machine
    assert not (tmp_path / 'e').exists()


@pytest.mark.parametrize('benchmark', ['nupa', 'gsm'])
@pytest.mark.parametrize('chat', [False, True])
def test_null_completions_are_counted_not_silently_scored(server, tok_dir, tmp_path, capsys, benchmark, chat):
    "A server that answers every other request with text null: those records say output null, summary.json counts them, a warning says so."
    server.fault = 'null_text'
    assert main(argv(benchmark, server, tok_dir, tmp_path / 'e', '--apply-chat-template' if chat else '--no-chat-template')) == 0
    err = capsys.readouterr().err
    recs = read_jsonl(tmp_path / 'e' / 'results.jsonl')
    summary = json.loads((tmp_path / 'e' / 'summary.json').read_text())
    assert server.nulls == 2 and len(recs) == 4
    assert sum(r['output'] is None for r in recs) == server.nulls and all(r['output'] == '7' for r in recs if r['output'] is not None)
    assert (summary['missing_outputs'], summary['empty_outputs']) == (server.nulls, server.nulls)
    assert all(not r['correct'] for r in recs if r['output'] is None)
    assert f'{server.nulls} of 4 outputs are empty ({server.nulls} with no text at all from the server)' in err, err


def test_zeh_counts_null_completions(server, tok_dir, tmp_path, capsys):
    server.fault = 'null_text'
    assert main(argv('zeh', server, tok_dir, tmp_path / 'z', '--no-chat-template')) == 0
    summary = json.loads((tmp_path / 'z' / 'summary.json').read_text())
    assert summary['samples'] == 6 and summary['empty_outputs'] == server.nulls == 3
    assert '3 of 6 outputs are empty' in capsys.readouterr().err


@pytest.mark.parametrize('benchmark', ['nupa', 'gsm', 'zeh'])
def test_a_server_that_never_answers_is_given_up_on_in_time(server, tok_dir, tmp_path, capsys, benchmark):
    "--timeout bounds a try and --max-retries the tries: a request the server never answers ends the run in about 2 x 1 s."
    server.fault = 'hang'
    t0 = time.monotonic()
    line = one_line_error(capsys, argv(benchmark, server, tok_dir, tmp_path / 'e', '--no-chat-template', '--timeout', '1', '--max-retries', '1'))
    print(line)
    assert time.monotonic() - t0 < 15, time.monotonic() - t0
    assert 'gave no usable answer in 2 tries' in line and ('within 1 s' in line or 'timed out' in line), line
    assert 2 <= server.posts <= 3      # two tries of the first request (and the next one, in flight when the run gave up)
    assert not (tmp_path / 'e').exists()


@pytest.mark.parametrize('flags,msg', [(['--timeout', '0'], 'argument --timeout: expected a finite number > 0'),
                                       (['--max-retries', '-1'], 'argument --max-retries: expected an integer >= 0'),
                                       (['--backend', 'hf', '--timeout', '5'], '--timeout is for --backend openai')])
def test_timeout_flags_are_checked(tmp_path, capsys, flags, msg):
    args = ['eval', 'nupa', '--model', 'smollm2-135m-instruct', '--tasks', 'add_integer', '--lengths', '1', '--n', '1', *flags, '--out', str(tmp_path / 'e')]
    assert msg in one_line_error(capsys, args)


@pytest.mark.parametrize('sig,rc,word', [('SIGTERM', 143, 'terminated'), ('SIGINT', 130, 'interrupted')])
def test_an_interrupt_ends_a_run_against_a_server_that_never_answers(server, tok_dir, tmp_path, sig, rc, word):
    "Default flags (300 s a try, 2 retries, 8 requests in flight): SIGTERM or Ctrl-C ends the command within 5 s with one line (the request threads do not keep it alive)."
    import os, signal, subprocess, sys
    server.fault = 'hang'
    args = argv('nupa', server, tok_dir, tmp_path / 'e', '--no-chat-template')
    args[args.index('--max-concurrency') + 1] = '8'
    env = {**os.environ, 'NUMCOOK_PROGRESS': '0'}
    p = subprocess.Popen([str(Path(sys.executable).parent / 'numcook'), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(600):                          # until the requests are out, held by the server
        if server.posts >= 4 or p.poll() is not None: break
        time.sleep(0.05)
    assert p.poll() is None and server.posts >= 4
    t0 = time.monotonic()
    p.send_signal(getattr(signal, sig))
    _, err = p.communicate(timeout=60)
    assert time.monotonic() - t0 < 5, time.monotonic() - t0
    assert p.returncode == rc and err.strip() == f'numcook eval: {word}', (p.returncode, err[-2000:])
    assert not (tmp_path / 'e').exists()     # no answer came, so nothing was written and nothing is left (no lock either)
