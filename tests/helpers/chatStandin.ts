/**
 * Python for the team drivers' tests (tests/verl-team.test.ts, tests/bridge-smoke.test.ts): the
 * character tokenizer their stand-in models read and write (ids = code points + 3, 0–2 special),
 * with the one chat template the drivers apply (one user message, a generation prompt), and
 * `serve_teammates(answer)`, a local OpenAI-style chat server for the teammates — POST
 * /v1/chat/completions answered with `answer(body)`'s text — returning its base URL and the server
 * (to shut down). Each test
 * brings its own `answer`: a scripted reply, or a tiny torch model's sample.
 */
export const CHAT_STANDIN_PY = String.raw`
import json, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Tok:
    def encode(self, s):
        return [ord(ch) + 3 for ch in s]
    def decode(self, ids, skip_special_tokens=False):
        return "".join(chr(i - 3) for i in ids if i >= 3)
    def apply_chat_template(self, messages, tokenize=True, add_generation_prompt=True):
        assert len(messages) == 1 and messages[0]["role"] == "user" and tokenize and add_generation_prompt
        return self.encode("<|user|>" + messages[0]["content"] + "<|assistant|>")


tok = Tok()


def serve_teammates(answer):
    class Teammates(BaseHTTPRequestHandler):
        def do_POST(self):
            assert self.path == "/v1/chat/completions", self.path
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            out = json.dumps({"choices": [{"message": {"role": "assistant", "content": answer(body)}}]}).encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
        def log_message(self, *a):
            pass
    http = ThreadingHTTPServer(("127.0.0.1", 0), Teammates)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    return "http://127.0.0.1:%d/v1/" % http.server_address[1], http
`;
