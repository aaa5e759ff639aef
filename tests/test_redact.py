"""Index-time redaction: planted secrets of every kind vanish; ordinary code stays as it is.

Every planted secret is fake and built at test time from a seeded RNG (realistic shapes, no
literal credential in this file), so no scanner flags the repository. Run this file as a script
to print recall per engine on the planted set (the numbers quoted in SECURITY.md).
"""

from __future__ import annotations

import base64
import json
import random
import string

import pytest

from funes import scan
from funes.errors import FunesError
from funes.ingest import chunk
from funes.ingest.redact import apply, redact_texts
from funes.scan import kingfisher

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"


class _Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def s(self, n: int, alphabet: str = ALNUM) -> str:
        while True:
            out = "".join(self.r.choice(alphabet) for _ in range(n))
            # realistic random tokens mix classes; avoid rare all-letter draws
            if alphabet != ALNUM or n < 8 or (any(c.isdigit() for c in out) and any(c.isupper() for c in out)):
                return out

    def password(self) -> str:
        return self.s(5, string.ascii_letters) + self.s(2, string.digits) + self.r.choice("!#%^-_+") + self.s(4)

    def pem(self, label: str, lines: int = 12, width: int = 64, head: str = "") -> tuple[str, list[str]]:
        body = [head + self.s(width - len(head), B64)] + [self.s(width, B64) for _ in range(lines - 1)]
        body.append(self.s(20, B64) + "==")
        text = f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----\n"
        return text, body

    def jwt(self) -> str:
        enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")  # noqa: E731
        head = enc({"alg": "HS256", "typ": "JWT"})
        payload = enc({"sub": self.s(10, string.digits), "name": "Jane Roe", "iat": 1716239022})
        return f"{head}.{payload}.{self.s(43, ALNUM + '-_')}"


def planted(seed: int = 7) -> list[tuple[str, str, list[str]]]:
    """(label, text, secrets that must not survive) covering every kind the brief lists."""
    g = _Gen(seed)
    c: list[tuple[str, str, list[str]]] = []

    def add(label, text, *secrets):
        c.append((label, text, list(secrets)))

    akid, aks = "AKIA" + g.s(16, string.ascii_uppercase + "234567"), g.s(40, B64)
    add(
        "aws-credentials-file",
        f"[default]\naws_access_key_id = {akid}\naws_secret_access_key = {aks}\nregion = eu-west-1\n",
        akid,
        aks,
    )
    akid2, aks2 = "AKIA" + g.s(16, string.ascii_uppercase + "234567"), g.s(40, B64)
    add("aws-export", f"export AWS_ACCESS_KEY_ID={akid2}\nexport AWS_SECRET_ACCESS_KEY={aks2}\naws s3 ls", akid2, aks2)
    akid3, aks3 = "AKIA" + g.s(16, string.ascii_uppercase + "234567"), g.s(40, B64)
    add(
        "aws-boto3",
        f's3 = boto3.client("s3", aws_access_key_id="{akid3}", aws_secret_access_key="{aks3}")',
        akid3,
        aks3,
    )

    pem, body = g.pem("PRIVATE KEY", 16, head="MIIEvgIBADANBgkqhkiG9w0BAQEFAASC")
    sa = {
        "type": "service_account",
        "project_id": "acme-prod-4411",
        "private_key_id": g.s(40, HEX),
        "private_key": pem,
        "client_email": "deployer@acme-prod-4411.iam.gserviceaccount.com",
        "client_id": g.s(21, string.digits),
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": "https://oauth2.googleapis.com/token",
        "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
    }
    add("gcp-service-account-json", json.dumps(sa, indent=2), *body)

    azk = g.s(86, B64) + "=="
    add(
        "azure-connection-string",
        f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acmeblobs;AccountKey={azk};EndpointSuffix=core.windows.net",
        azk,
    )
    azk2 = g.s(86, B64) + "=="
    add("azure-storage-key-env", f"AZURE_STORAGE_KEY={azk2}", azk2)
    sbk = g.s(43, B64) + "="
    add(
        "azure-servicebus",
        f'conn = "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={sbk}"',
        sbk,
    )
    azcs = g.s(3) + "8Q~" + g.s(31, ALNUM + "~_.-")
    add(
        "azure-client-secret", f"AZURE_CLIENT_SECRET={azcs}\nAZURE_TENANT_ID=72f988bf-86f1-41af-91ab-2d7cd011db47", azcs
    )

    ghp, gho = "ghp_" + g.s(36), "gho_" + g.s(36)
    add("github-ghp", f"git remote set-url origin https://{ghp}@github.com/acme/api.git", ghp)
    add("github-gho", f"GH_TOKEN={gho} gh pr list", gho)
    ghpat = "github_pat_11" + g.s(20, string.ascii_uppercase + string.digits) + "_" + g.s(59)
    add("github-fine-grained", f"Using token {ghpat} for the API", ghpat)
    glpat = "glpat-" + g.s(20, ALNUM + "_-")
    add("gitlab-pat", f'curl --header "PRIVATE-TOKEN: {glpat}" "https://gitlab.example.com/api/v4/projects"', glpat)

    xoxb = f"xoxb-{g.s(12, string.digits)}-{g.s(13, string.digits)}-{g.s(24)}"
    add("slack-bot", f'SLACK_BOT_TOKEN="{xoxb}"', xoxb)
    xoxp = f"xoxp-{g.s(12, string.digits)}-{g.s(12, string.digits)}-{g.s(13, string.digits)}-{g.s(32, HEX)}"
    add("slack-user", f"client = WebClient(token='{xoxp}')", xoxp)
    hook = f"https://hooks.slack.com/services/T{g.s(8, string.ascii_uppercase + string.digits)}/B{g.s(10, string.ascii_uppercase + string.digits)}/{g.s(24)}"
    add(
        "slack-webhook",
        f"curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"deploy done\"}}' {hook}",
        hook.split("/services/")[1],
    )

    sk_live = "sk_live_" + g.s(99)
    add("stripe-live", f'stripe.api_key = "{sk_live}"', sk_live)
    rk_live = "rk_live_" + g.s(24)
    add("stripe-restricted", f"STRIPE_KEY={rk_live}", rk_live)

    oa_proj = "sk-proj-" + g.s(74, ALNUM + "_-") + "T3BlbkFJ" + g.s(74, ALNUM + "_-")
    add("openai-proj", f"OPENAI_API_KEY={oa_proj}", oa_proj)
    oa_legacy = "sk-" + g.s(20) + "T3BlbkFJ" + g.s(20)
    add("openai-legacy", f'client = OpenAI(api_key="{oa_legacy}")', oa_legacy)
    oa_plain = "sk-proj-" + g.s(120, ALNUM + "_-")
    add("openai-proj-plain", f"the key is {oa_plain} — rotate it", oa_plain)
    ant = "sk-ant-api03-" + g.s(93, ALNUM + "_-") + "AA"
    add("anthropic", f"export ANTHROPIC_API_KEY={ant}", ant)
    ant_admin = "sk-ant-admin01-" + g.s(80, ALNUM + "_-")
    add("anthropic-admin", f'{{"x-api-key": "{ant_admin}"}}', ant_admin)

    hf1, hf2 = "hf_" + g.s(34, string.ascii_letters), "hf_" + g.s(34)
    add("huggingface-letters", f"huggingface-cli login --token {hf1}", hf1)
    add("huggingface-mixed", f'HfApi(token="{hf2}").whoami()', hf2)

    npm_tok = "npm_" + g.s(36)
    add("npm-token", f"//registry.npmjs.org/:_authToken={npm_tok}", npm_tok)
    npm_uuid = f"{g.s(8, HEX)}-{g.s(4, HEX)}-{g.s(4, HEX)}-{g.s(4, HEX)}-{g.s(12, HEX)}"
    add("npm-legacy-authtoken", f"//registry.npmjs.org/:_authToken={npm_uuid}", npm_uuid)
    pypi = "pypi-AgEIcHlwaS5vcmc" + g.s(140, ALNUM + "_-")
    add("pypi-token", f"[pypi]\n  username = __token__\n  password = {pypi}\n", pypi)

    tw_tok, tw_sk, tw_sec = g.s(32, HEX), "SK" + g.s(32, HEX), g.s(32)
    add(
        "twilio",
        f"TWILIO_ACCOUNT_SID=AC{g.s(32, HEX)}\nTWILIO_AUTH_TOKEN={tw_tok}\nTWILIO_API_KEY={tw_sk}\nTWILIO_API_SECRET={tw_sec}",
        tw_tok,
        tw_sk,
        tw_sec,
    )
    sg = f"SG.{g.s(22, ALNUM + '_-')}.{g.s(43, ALNUM + '_-')}"
    add("sendgrid", f"sg = SendGridAPIClient('{sg}')", sg)
    tg = f"{g.s(10, string.digits)}:AA{g.s(33, ALNUM + '_-')}"
    add("telegram-bot", f'bot = telebot.TeleBot("{tg}")', tg)
    tg2 = f"{g.s(9, string.digits)}:AA{g.s(33, ALNUM + '_-')}"
    add("telegram-url", f"curl https://api.telegram.org/bot{tg2}/getUpdates", tg2)

    jwt = g.jwt()
    add("jwt-json", f'{{"id_token": "{jwt}", "expires_in": 3600}}', jwt)
    bearer = g.s(48, ALNUM + "-._")
    add("curl-bearer", f'curl -s -H "Authorization: Bearer {bearer}" https://api.acme.dev/v1/me', bearer)
    bearer_jwt = g.jwt()
    add("curl-bearer-jwt", f"curl -H 'Authorization: Bearer {bearer_jwt}' localhost:8080/admin", bearer_jwt)
    xkey = g.s(32)
    add("curl-x-api-key", f'curl -H "X-API-Key: {xkey}" https://api.acme.dev/items', xkey)

    for label, kind, head in (
        ("pem-rsa", "RSA PRIVATE KEY", "MIIEowIBAAKCAQEA"),
        ("pem-ec", "EC PRIVATE KEY", "MHcCAQEEI"),
        ("pem-pkcs8", "PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"),
        (
            "openssh-ed25519",
            "OPENSSH PRIVATE KEY",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
        ),
        ("pem-encrypted", "ENCRYPTED PRIVATE KEY", "MIIFHzBJBgkqhkiG9w0BBQ0wPDAbBgkqhkiG9w0BBQwwDgQI"),
    ):
        key, body = g.pem(
            kind, 6 if "EC" in kind or "OPENSSH" in kind else 14, width=70 if "OPENSSH" in kind else 64, head=head
        )
        add(label, f"$ cat ~/.ssh/id_key\n{key}$ ", *body)
    key, body = g.pem("OPENSSH PRIVATE KEY", 5, width=70, head="b3BlbnNzaC1rZXktdjEAAAAA")
    add("openssh-truncated", "[tool_result Read] " + key.split("-----END")[0][:-40] + "\n... (truncated)", *body[:-2])

    pw = [g.password() for _ in range(8)]
    add("url-postgres", f"DATABASE_URL=postgres://app_user:{pw[0]}@db.internal:5432/app", pw[0])
    add(
        "url-mongodb",
        f'client = MongoClient("mongodb+srv://admin:{pw[1]}@cluster0.ab1cd.mongodb.net/?retryWrites=true")',
        pw[1],
    )
    add("url-redis", f"redis-cli -u redis://:{pw[2]}@cache.internal:6379/0 ping", pw[2])
    add("url-https", f"git clone https://deploy:{pw[3]}@git.acme.dev/acme/infra.git", pw[3])
    add("url-amqp", f"CELERY_BROKER_URL = 'amqp://celery:{pw[4]}@rabbitmq:5672//'", pw[4])

    env_pw, api, sk = g.password(), g.s(32), g.s(50, ALNUM + "!@#%^*(-_=+)")
    add("env-db-password", f"DB_HOST=localhost\nDB_PASSWORD={env_pw}\nDB_PORT=5432", env_pw)
    add("env-export-api-key", f"export API_KEY={api}", api)
    add("env-django-secret", f"SECRET_KEY='{sk}'", sk)
    cp = g.password()
    add("compose-yaml", f"services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: {cp}\n", cp)
    yp = g.password()
    add("yaml-password", f"spring:\n  datasource:\n    username: app\n    password: {yp}\n", yp)
    jp, cs = g.password(), g.s(40)
    add("json-password", json.dumps({"username": "admin", "password": jp}), jp)
    add("json-client-secret", json.dumps({"client_id": "web-frontend", "client_secret": cs}, indent=2), cs)
    ht, hs = g.s(40, HEX), g.s(32)
    add("generic-secret-assignment", f"secret={ht}", ht)
    add("generic-token-assignment", f'auth_token = "{hs}"', hs)
    qt = g.s(40)
    add("query-access-token", f"GET https://graph.acme.dev/v2/me?fields=id,name&access_token={qt}", qt)
    ft, fp = g.s(36), g.password()
    add("cli-token-flag", f"acme-cli deploy --token {ft} --region eu", ft)
    add("cli-password-flag", f"mysql -h db -u root --password={fp} app < dump.sql", fp)

    # escaped forms: JSON-in-JSON tool input, unicode-escaped quotes, PEM with literal \n, base64
    cu = g.password()
    add("json-escaped-curl-u", json.dumps(json.dumps({"cmd": f"curl -u admin:{cu} https://ci.acme.dev/api/json"})), cu)
    up = g.password()
    add(
        "unicode-escaped-quotes",
        f"{{\\u0022password\\u0022: \\u0022{up}\\u0022, \\u0022user\\u0022: \\u0022ops\\u0022}}",
        up,
    )
    key, body = g.pem("RSA PRIVATE KEY", 10, head="MIIEpAIBAAKCAQEA")
    add("pem-json-escaped", json.dumps({"file_path": "/srv/app/key.pem", "content": key}), *body)
    add("pem-double-escaped", json.dumps(json.dumps({"content": key})), *body)
    tok = "ghp_" + g.s(36)
    add("json-escaped-env", json.dumps({"command": f'echo "GITHUB_TOKEN={tok}" >> .env'}), tok)
    kp = g.password()
    manifest = f"DB_PASSWORD={kp}\nAPI_TOKEN={g.s(32)}\n"
    blob = base64.b64encode(manifest.encode()).decode()
    add("base64-wrapped-env", f"apiVersion: v1\nkind: Secret\ndata:\n  app.env: {blob}\n", blob)
    ghb = "ghp_" + g.s(36)
    blob2 = base64.b64encode(f"https://x-access-token:{ghb}@github.com/acme/app".encode()).decode()
    add("base64-wrapped-token", f"echo {blob2} | base64 -d", blob2)
    return c


def variants(seed: int = 23) -> list[tuple[str, str, list[str]]]:
    """The same credentials in the other places transcripts show them (tool I/O, configs,
    languages, prose): a second set, written apart from the rules, to check they generalise."""
    g = _Gen(seed)
    c: list[tuple[str, str, list[str]]] = []

    def add(label, text, *secrets):
        c.append((label, text, list(secrets)))

    pw = [g.password() for _ in range(20)]
    tok = [g.s(40) for _ in range(10)]
    oa = "sk-proj-" + g.s(48, ALNUM + "_-")
    add(
        "tool-use-json-export",
        json.dumps({"command": f"export OPENAI_API_KEY={oa} && python app.py", "description": "run"}),
        oa,
    )
    sl = "sk_live_" + g.s(24)
    arrow = chr(0x2192)  # the Read tool's line-number arrow
    add(
        "read-tool-env-listing",
        f"     1{arrow}DATABASE_URL=postgres://app:{pw[0]}@localhost/app\n     2{arrow}STRIPE_SECRET_KEY={sl}\n",
        pw[0],
        sl,
    )
    add("cat-n-env", f"     1\tDEBUG=false\n     2\tSMTP_PASSWORD={pw[1]}\n", pw[1])
    add("windows-set", f"C:\\app> set DB_PASS={pw[2]}", pw[2])
    add("powershell-env", f'$env:API_TOKEN="{tok[0]}"', tok[0])
    add("docker-run-env", f"docker run -d -e POSTGRES_PASSWORD={pw[3]} -p 5432:5432 postgres:16", pw[3])
    glp = "glpat-" + g.s(20)
    add("git-clone-oauth2", f"git clone https://oauth2:{glp}@gitlab.com/acme/infra.git", glp)
    add("python-attr-key", f'openai.api_key = "{tok[1]}"', tok[1])
    ant = "sk-ant-api03-" + g.s(95, ALNUM + "_-")
    add("python-anthropic-client", f"client = anthropic.Anthropic(api_key='{ant}')", ant)
    add("requests-headers", f'r = requests.get(url, headers={{"Authorization": "Bearer {tok[2]}"}})', tok[2])
    add("k8s-stringdata", f"apiVersion: v1\nkind: Secret\nstringData:\n  password: {pw[4]}\n", pw[4])
    add("nested-json-config", json.dumps({"db": {"host": "db", "user": "app", "pass": pw[5]}}), pw[5])
    add("toml-config", f'[service]\napi_key = "{tok[3]}"\npassword = "{pw[6]}"\n', tok[3], pw[6])
    add("ini-config", f"[database]\nuser=app\npassword={pw[7]}\n", pw[7])
    add("xml-element", f"<datasource><username>app</username><password>{pw[8]}</password></datasource>", pw[8])
    add("dotnet-appsettings", f'<add key="ApiKey" value="{tok[4]}" />', tok[4])
    add("php-define", f"define('DB_PASSWORD', '{pw[9]}');", pw[9])
    add("go-setenv", f'os.Setenv("GITHUB_TOKEN", "{tok[5]}")', tok[5])
    add("js-object", f"const config = {{ apiKey: '{tok[6]}', region: 'us-east-1' }};", tok[6])
    add("wget-password", f"wget --user=deploy --password={pw[10]} https://files.acme.dev/build.tgz", pw[10])
    add("sshpass", f"sshpass -p '{pw[11]}' ssh root@10.0.0.7", pw[11])
    add("redis-cli-a", f"redis-cli -h cache -a {pw[12]} INFO", pw[12])
    add("jdbc-query", f"jdbc:postgresql://db:5432/app?user=app&password={pw[13]}", pw[13])
    add(
        "sqlserver-connstr",
        f"Server=tcp:acme.database.windows.net,1433;Database=app;User Id=sa;Password={pw[14]};Encrypt=True;",
        pw[14],
    )
    add("netrc", f"machine api.heroku.com\n  login me@acme.dev\n  password {tok[7]}\n".replace("\n  ", " "), tok[7])
    add(
        "basic-auth-header",
        "Authorization: Basic " + base64.b64encode(f"ops:{pw[15]}".encode()).decode(),
        base64.b64encode(f"ops:{pw[15]}".encode()).decode(),
    )
    add("prose-password", f"ok, I set the admin password is {pw[16]} for now", pw[16])
    add("x-auth-token-header", f'curl --header "X-Auth-Token: {tok[8]}" https://api.acme.dev', tok[8])
    rails = g.s(128, HEX)
    add("rails-secret-key-base", f"production:\n  secret_key_base: {rails}\n", rails)
    k8s = base64.b64encode(pw[17].encode()).decode()
    add("k8s-secret-data", f"kind: Secret\ndata:\n  password: {k8s}\n", k8s)
    key, body = g.pem("RSA PRIVATE KEY", 8, head="MIIEpAIBAAKCAQEA")
    numbered = "".join(f"{i + 1:6d}{arrow}{line}\n" for i, line in enumerate(key.splitlines()))
    add("pem-read-numbered", numbered, *body)
    add("pem-heredoc", f"cat > ~/.ssh/id_rsa <<'EOF'\n{key}EOF\nchmod 600 ~/.ssh/id_rsa", *body)
    gk = "AIza" + g.s(35, ALNUM + "_-")
    add("google-api-key-url", f"https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key={gk}", gk)
    jwt = g.jwt()
    add("cookie-jwt", f"Cookie: session={jwt}; theme=dark", jwt)
    xs = f"xoxb-{g.s(11, string.digits)}-{g.s(12, string.digits)}-{g.s(24)}"
    add("slack-in-json", json.dumps({"channel": "#ops", "token": xs}), xs)
    add("yaml-openai", f"llm:\n  OPENAI_API_KEY: {oa}\n", oa)
    npmrc = base64.b64encode(f"deploy:{pw[18]}".encode()).decode()
    add("npmrc-auth", f"_auth={npmrc}\nemail=ci@acme.dev", npmrc)
    add(
        "aws-session-token",
        f"AWS_SESSION_TOKEN={g.s(300, B64)}",
    )
    c[-1][2].append(c[-1][1].split("=", 1)[1])
    add("gh-secret-set", f'gh secret set DEPLOY_KEY --body "{tok[9]}"', tok[9])
    add("heroku-config", f"heroku config:set SECRET_KEY={pw[19]} -a acme-api", pw[19])
    kp, aws = g.password(), g.s(40, B64)
    add("kubectl-from-literal", f"kubectl create secret generic db --from-literal=password={kp}", kp)
    add("aws-configure-set", f"aws configure set aws_secret_access_key {aws}", aws)
    pp, pt, pk = g.password(), g.s(32), g.s(32)
    add("prose-password-for", f"the password for the staging db is {pp} (rotate monthly)", pp)
    add("prose-token-is", f"The API token is {pt}", pt)
    add("prose-api-key-colon", f"api key: {pk}", pk)
    return c


BENIGN = [
    'password = os.environ["PASSWORD"]',
    "token: str",
    "    api_key: Optional[str] = None",
    "def login(username: str, password: str) -> Token:",
    "DB_PASSWORD=${DB_PASSWORD}",
    "export API_KEY=your-api-key",
    'OPENAI_API_KEY="sk-..."',
    "SECRET_KEY=xxx",
    "password: ***",
    '"password": "<password>"',
    "Authorization: Bearer <token>",
    'headers = {"Authorization": f"Bearer {token}"}',
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.com',
    "git commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixes the login bug",
    "request id 123e4567-e89b-12d3-a456-426614174000 failed",
    "chunk 9f86d081884c7d65 and 2c26b46b68ffc68f are neighbours",
    "token = get_token()",
    "const apiKey = process.env.API_KEY;",
    "password_hash = bcrypt.hashpw(password, salt)",
    "max_tokens = 4096",
    '"input_tokens": 1532, "output_tokens": 211',
    "if not password: raise ValueError('password required')",
    "postgres://user:password@localhost:5432/db",
    "postgres://${DB_USER}:${DB_PASS}@db:5432/app",
    "Set the GITHUB_TOKEN secret in the repository settings.",
    "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')",
    "secretKeyRef:\n  name: app-secrets\n  key: password",
    "ssh -i ~/.ssh/id_ed25519 deploy@10.0.0.5",
    "private_key_path = '/etc/ssl/private/server.key'",
    "if key.startswith('-----BEGIN RSA PRIVATE KEY-----'):",
    "The API key is stored in ~/.config/acme/credentials.json",
    "password_field = forms.CharField(widget=forms.PasswordInput)",
    "export AWS_PROFILE=prod",
    '{"type": "tool_use", "id": "toolu_01A2b3C4d5E6f7G8h9J0kLmN", "name": "Bash"}',
    "access_token: ${{ secrets.DEPLOY_TOKEN }}",
    "token_type = 'bearer'",
    "client.login(password=password)",
    "ARG NPM_TOKEN",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "Bearer authentication is configured in settings.py",
    "redis://localhost:6379/0",
    "Tests: 42 passed, 0 failed (3.2s)",
    "The password is stored hashed with bcrypt, never in plain text.",
    "the API key is missing; the token is invalid or expired",
    "git push -u origin main",
    "mysql -u root -p app",
    '<input type="password" name="password" autocomplete="current-password" />',
    "<password>{{ .Values.db.password }}</password>",
    "define('DB_PASSWORD', getenv('DB_PASSWORD'));",
    'os.Setenv("API_KEY", apiKey)',
    "Server=localhost;Database=app;Trusted_Connection=True;",
    "export PATH=$PATH:/usr/local/bin",
    '"signature": "EiYKJGUyNDgzMGE3LTVjZDYtNDJmZS05OThiLWVlNTM5ZTcyYjljMw=="',
    "const token = await getToken();",
    "password: z.string().min(8, 'too short'),",
    "--- PASS: TestConfig (0.00s)",
    'passwordInput.value = ""',
    '"api_key": null,',
    'api_key: "{{ api_key }}"',
    'secret_name = "prod/db/password"',
    "echo $CR_PAT | docker login ghcr.io -u octocat --password-stdin",
    "npm test -- --passWithNoTests",
    "client_secret = settings.GOOGLE_CLIENT_SECRET",
    "AUTH_SECRET=",
    'token = ""  # set me',
    '"tokenizer": "cl100k_base"',
    "key_path: ~/.ssh/id_rsa.pub",
    "git clone https://user@github.com/org/repo.git",
    "ssh://git@github.com:22/org/repo",
    "http://localhost:3000/api?token=${token}",
    "curl -u $USER:$PASS https://api.example.com",
    "api_key = 'cmd:cat ~/.local/share/openrouter-key'",
    '"related_skills": ["github-auth", "github-code-review"]',
    'audit.Audit("createSecret", "create a secret")',
    "const apiKey = options?.apiKey || getApiKey(model.provider);",
    "ANTHROPIC_AUTH_TOKEN: PROXY_MANAGED",
    "password_argument: :current_password",
    "my password was reset yesterday",
    "The token is invalid.",
    "the password was changed in commit 3f2a9c1",
    "Gmail: enable 2FA -> create App Password at https://myaccount.google.com/apppasswords",
    "key: value",
    "The secret is out",
    "secret key: SECRET_KEY_BASE",
]


@pytest.fixture(scope="module")
def cases():
    return planted()


@pytest.fixture(scope="module")
def redacted(cases):
    """One redact_texts call over the planted set and the benign lines (one Kingfisher run)."""
    texts = [t for _, t, _ in cases] + BENIGN
    return redact_texts(texts)


def test_every_planted_secret_is_gone_and_marked(cases, redacted):
    out, kinds = redacted
    missed = []
    for (label, _, secrets), text, ks in zip(cases, out, kinds):
        if any(s in text for s in secrets) or "[REDACTED:" not in text or not ks:
            missed.append(label)
    assert not missed, f"secrets survived in: {missed}"


@pytest.mark.parametrize(
    "label,kind",
    [
        ("aws-export", "AWS"),
        ("github-ghp", "GitHub"),
        ("huggingface-mixed", "HuggingFace"),
        ("pem-rsa", "PrivateKey"),
        ("openssh-ed25519", "PrivateKey"),
        ("url-postgres", "URLPassword"),
        ("env-db-password", "EnvAssignment"),
        ("jwt-json", "JWT"),
        ("slack-bot", "Slack"),
        ("anthropic", "Anthropic"),
        ("openai-proj", "OpenAI"),
        ("pem-json-escaped", "PrivateKey"),
    ],
)
def test_kinds_are_short_stable_names(cases, redacted, label, kind):
    i = [c[0] for c in cases].index(label)
    assert kind in redacted[1][i]
    assert f"[REDACTED:{kind}]" in redacted[0][i]


def test_only_the_value_is_replaced(cases, redacted):
    i = [c[0] for c in cases].index("env-db-password")
    assert redacted[0][i] == "DB_HOST=localhost\nDB_PASSWORD=[REDACTED:EnvAssignment]\nDB_PORT=5432"
    i = [c[0] for c in cases].index("url-postgres")
    assert redacted[0][i].startswith("DATABASE_URL=postgres://app_user:[REDACTED:URLPassword]@db.internal:5432/app")


def test_variants_are_redacted():
    cases = variants()
    out, _kinds = redact_texts([t for _, t, _ in cases])
    missed = [label for (label, _, secrets), text in zip(cases, out) if any(x in text for x in secrets)]
    assert not missed, f"secrets survived in: {missed}"


def test_no_false_positive_on_benign_code(redacted):
    out, kinds = redacted
    n = len(BENIGN)
    flagged = [(line, k) for line, o, k in zip(BENIGN, out[-n:], kinds[-n:]) if k or o != line]
    assert not flagged


def test_escaped_forms_map_back_to_exact_raw_spans(cases, redacted):
    out = redacted[0]
    by = {c[0]: (c, o) for c, o in zip(cases, out)}
    (_, _raw, _), text = by["json-escaped-curl-u"]
    assert text.startswith('"{\\"cmd\\": \\"curl -u admin:[REDACTED:')  # JSON structure intact
    (_, _raw, _), text = by["unicode-escaped-quotes"]
    assert text.startswith("{\\u0022password\\u0022: \\u0022[REDACTED:") and text.endswith("\\u0022ops\\u0022}")
    (_, _raw, _), text = by["pem-json-escaped"]
    assert json.loads(text)["content"].startswith("[REDACTED:PrivateKey]")  # still valid JSON


def test_secret_across_a_chunk_boundary_is_gone():
    g = _Gen(11)
    key, body = g.pem("OPENSSH PRIVATE KEY", 10, width=70, head="b3BlbnNzaC1rZXktdjEAAAAA")
    pw = g.password()
    text = "[tool_result Bash] " + "lorem ipsum dolor " * 45 + "\n" + key + "x " * 400 + f"DB_PASSWORD={pw}\n"
    before = chunk.split(text)
    assert not any(all(line in p for line in body) for p in before)  # unredacted, the key is split
    assert any(body[0] in p for p in before) and any(body[-1] in p for p in before)
    (red,), (kinds,) = redact_texts([text])
    pieces = chunk.split(red)
    assert len(pieces) > 1
    for piece in pieces:
        assert not any(line[:16] in piece for line in body) and pw not in piece
    assert kinds == ["PrivateKey", "EnvAssignment"]


def test_idempotent(redacted):
    out, _ = redacted
    again, kinds = redact_texts(out)
    assert again == out
    assert not any(kinds)


def test_batch_of_500_makes_one_kingfisher_call(tmp_path, monkeypatch):
    real = kingfisher.binary()[0]
    if real is None:
        pytest.skip("kingfisher is not installed")
    runs = tmp_path / "runs.log"
    wrapper = tmp_path / "kingfisher"  # counts runs at the process edge, then runs the real binary
    wrapper.write_text(f'#!/bin/sh\necho run >> "{runs}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("FUNES_KINGFISHER", str(wrapper))
    g = _Gen(5)
    texts = [f"step {i}: ran tests, all green" if i % 50 else f"export GITHUB_TOKEN=ghp_{g.s(36)}" for i in range(500)]
    out, kinds = redact_texts(texts)
    assert runs.read_text().split() == ["run"]
    assert sum(1 for k in kinds if k) == 10
    assert all("ghp_" not in o for o in out)


def test_kingfisher_failure_fails_closed(tmp_path, monkeypatch):
    fake = tmp_path / "kingfisher"
    g = _Gen(4)
    echoed, planted_tok = "ghp_" + g.s(36), "ghp_" + g.s(36)
    fake.write_text(f"#!/bin/sh\necho 'boom: scanning {echoed} failed' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("FUNES_KINGFISHER", str(fake))
    with pytest.raises(FunesError) as e:
        redact_texts([f"export GITHUB_TOKEN={planted_tok}"])
    message = f"{e.value} {e.value.hint}"
    assert "exit 3" in message and echoed[4:] not in message and planted_tok[4:] not in message


def test_configured_but_missing_kingfisher_fails_closed(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNES_KINGFISHER", str(tmp_path / "no-such-kingfisher"))
    with pytest.raises(FunesError, match="could not be run"):
        redact_texts(["hello"])


def test_kingfisher_garbage_output_fails_closed(tmp_path, monkeypatch):
    fake = tmp_path / "kingfisher"
    fake.write_text("#!/bin/sh\ncat >/dev/null\necho '{not json'\nexit 200\n")
    fake.chmod(0o755)
    monkeypatch.setenv("FUNES_KINGFISHER", str(fake))
    with pytest.raises(FunesError, match="record 1 is not JSON"):
        redact_texts(["hello"])


def test_kingfisher_findings_are_mapped_back_or_fail_closed(tmp_path, monkeypatch):
    g = _Gen(8)
    tok = "ghp_" + g.s(36)
    texts = ["first text, line one", "second text\nthird line", f"x = {tok}"]  # lines 1 | 2-3 | 4
    records = [
        {"rule": {"id": "betterleaks.acme-token"}, "finding": {"snippet": "Q" + g.s(20), "line": 2, "column_start": 0}},
        {"rule": {"id": "betterleaks.github-pat"}, "finding": {"snippet": tok, "line": 1, "column_start": 0}},
        {"audit": {"summary": {"scan_succeeded": 1, "scan_failed": 0, "scan_partial": 0}}},
    ]
    fake = tmp_path / "kingfisher"
    fake.write_text(
        "#!/bin/sh\ncat >/dev/null\ncat <<'EOF'\n" + "\n".join(map(json.dumps, records)) + "\nEOF\nexit 200\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("FUNES_KINGFISHER", str(fake))
    found = scan.find(texts, only=["kingfisher"])
    assert found[0] == []  # the snippet is not on line 1: it is found where it is
    assert [(f.kind, texts[1][f.start : f.end]) for f in found[1]] == [("Acme", "second text")]  # nowhere: its line
    assert [(f.kind, texts[2][f.start : f.end]) for f in found[2]] == [("GitHub", tok)]


def test_without_kingfisher_the_other_engines_still_redact(monkeypatch):
    monkeypatch.setenv("FUNES_KINGFISHER", "off")
    assert kingfisher.binary() == (None, "disabled by FUNES_KINGFISHER")
    g = _Gen(3)
    secret = "hf_" + g.s(34)
    (out,), (kinds,) = redact_texts([f"HF_TOKEN={secret}"])
    assert secret not in out and kinds


def test_empty_and_null_texts_pass_through():
    assert redact_texts([]) == ([], [])
    assert redact_texts(["", None, "  "]) == (["", None, "  "], [[], [], []])


def test_findings_are_exact_spans():
    g = _Gen(9)
    tok = "glpat-" + g.s(20)
    text = f"héllo wörld 日本語 {tok} end"
    (fs,) = scan.find([text])
    assert [(f.kind, text[f.start : f.end]) for f in fs] == [("GitLab", tok)]
    assert apply(text, fs) == "héllo wörld 日本語 [REDACTED:GitLab] end"


def _recall(only, cases=None):
    cases = cases or planted()
    texts = [t for _, t, _ in cases]
    found = scan.find(texts, only=only)
    caught = [all(s not in apply(t, fs) for s in secrets) for (_, t, secrets), fs in zip(cases, found)]
    return sum(caught), len(caught), [c[0] for c, ok in zip(cases, caught) if not ok]


if __name__ == "__main__":  # recall per engine on the planted set
    for name, cases in (("planted", planted()), ("variants", variants())):
        for only in (["kingfisher"], ["detect-secrets"], ["funes-rules"], ["kingfisher", "detect-secrets"], None):
            n, total, missed = _recall(only, cases)
            print(
                f"{name:9s} {'+'.join(only) if only else 'combined':28s} {n}/{total} = {n / total:.0%}  missed: {missed}"
            )
