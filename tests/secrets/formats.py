# ruff: noqa: E501  (a table: one format a line, with its source)
"""Providers' documented token formats, written as generators (independent of runsnap's rules).

Each format is read from the provider's documentation or a public scanner's description of it
(prefix, alphabet, length, checksum) and written here as a *spec*: literal text and
``{ALPHABET:LENGTH}`` (or ``{ALPHABET:MIN-MAX}``) fields, ``{crc32}`` for GitHub's and npm's
checksum of the random part (CRC32, base62, 6 characters). The formats are split in two halves
by a fixed marker: ``tune`` (the rules were checked against these while they were written) and
``held`` (never looked at while tuning; reported separately).
"""

from __future__ import annotations

import base64
import json
import random
import string
import zlib

ALPHABETS = {
    "A": string.ascii_letters + string.digits,          # base62
    "a": string.ascii_lowercase + string.digits,
    "U": string.ascii_uppercase + string.digits,
    "h": "0123456789abcdef",
    "H": "0123456789ABCDEF",
    "d": string.digits,
    "b": string.ascii_letters + string.digits + "+/",
    "u": string.ascii_letters + string.digits + "_-",
    "L": string.ascii_letters,
    "l": string.ascii_lowercase,
    "2": string.ascii_uppercase + "234567",             # base32
    "c": "qpzry9x8gf2tvdw0s3jn54khce6mua7l",            # bech32
    "C": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
}

# (id, family, half, spec, source)
FORMATS: list[tuple[str, str, str, str, str]] = [
    # ---- code hosting and CI
    ("github-classic-pat", "code", "tune", "ghp_{A:30}{crc32}", "docs.github.com: About authentication / token formats (github.blog 2021-04-05)"),
    ("github-oauth", "code", "held", "gho_{A:30}{crc32}", "github.blog 2021-04-05 'Behind GitHub's new authentication token formats'"),
    ("github-user-to-server", "code", "tune", "ghu_{A:30}{crc32}", "github.blog 2021-04-05"),
    ("github-server-to-server", "code", "held", "ghs_{A:30}{crc32}", "github.blog 2021-04-05"),
    ("github-refresh", "code", "tune", "ghr_{A:70}{crc32}", "github.blog 2021-04-05; gitleaks github-refresh-token"),
    ("github-fine-grained", "code", "held", "github_pat_{A:22}_{A:59}", "docs.github.com fine-grained personal access tokens; gitleaks github-fine-grained-pat"),
    ("gitlab-pat", "code", "tune", "glpat-{u:20}", "docs.gitlab.com security/tokens 'Token prefixes'"),
    ("gitlab-pat-routable", "code", "held", "glpat-{u:27}.01.{a:9}", "docs.gitlab.com security/tokens (routable tokens)"),
    ("gitlab-pipeline-trigger", "code", "tune", "glptt-{h:40}", "docs.gitlab.com security/tokens 'Token prefixes'"),
    ("gitlab-runner", "code", "held", "glrt-{u:20}", "docs.gitlab.com security/tokens 'Token prefixes'"),
    ("gitlab-deploy", "code", "tune", "gldt-{u:20}", "docs.gitlab.com security/tokens 'Token prefixes'"),
    ("gitlab-feed", "code", "held", "glft-{u:20}", "docs.gitlab.com security/tokens 'Token prefixes'"),
    ("gitlab-oauth-secret", "code", "tune", "gloas-{h:64}", "docs.gitlab.com security/tokens 'Token prefixes'"),
    ("gitlab-scim", "code", "held", "glsoat-{u:20}", "docs.gitlab.com security/tokens 'Token prefixes'"),
    ("gitlab-incoming-mail", "code", "tune", "glimt-{a:25}", "docs.gitlab.com security/tokens 'Token prefixes'"),
    ("gitlab-agent", "code", "held", "glagent-{u:50}", "docs.gitlab.com security/tokens 'Token prefixes'"),
    ("gitlab-ci-job", "code", "tune", "glcbt-{h:2}_{u:20}", "docs.gitlab.com security/tokens 'Token prefixes'"),
    ("gitlab-feature-flags", "code", "held", "glffct-{u:20}", "docs.gitlab.com security/tokens 'Token prefixes'"),
    ("bitbucket-app-password", "code", "tune", "ATBB{A:32}", "gitleaks bitbucket (ATBB app passwords); Atlassian docs app passwords"),
    ("atlassian-api-token", "code", "held", "ATATT3{u:180}={H:8}", "Atlassian support: API token format (ATATT3 prefix); gitleaks atlassian-api-token"),
    ("circleci-pat", "code", "tune", "CCIPAT_{A:22}_{h:40}", "CircleCI docs: managing API tokens (CCIPAT_ prefix)"),
    ("buildkite", "code", "held", "bkua_{h:40}", "Buildkite docs: API access tokens (bkua_)"),
    ("sourcegraph", "code", "tune", "sgp_{h:16}_{h:40}", "Sourcegraph docs: access tokens (sgp_)"),
    ("sonarqube-user", "code", "held", "squ_{h:40}", "SonarQube docs: user tokens (squ_, sqp_, sqa_)"),
    ("sonarqube-project", "code", "tune", "sqp_{h:40}", "SonarQube docs: project analysis tokens"),
    ("octopus-deploy", "code", "held", "API-{U:26}", "Octopus docs: API keys; gitleaks octopus-deploy-api-key"),
    ("harness-pat", "code", "tune", "pat.{u:22}.{h:24}.{A:20}", "Harness docs: API keys / tokens; gitleaks harness-api-key"),
    ("prefect", "code", "held", "pnu_{A:36}", "Prefect docs: API keys; gitleaks prefect-api-token"),
    ("readme", "code", "tune", "rdme_{a:70}", "ReadMe docs: API keys; gitleaks readme-api-token"),
    ("scalingo", "code", "held", "tk-us-{u:48}", "Scalingo docs: API tokens; gitleaks scalingo-api-token"),
    ("travis-ci", "code", "tune", "travis_{A:22}", "Travis CI docs (travis_ tokens)"),
    # ---- package registries and container registries
    ("npm", "registry", "held", "npm_{A:30}{crc32}", "docs.npmjs.com access tokens; github.blog 2021-09-23 npm token format"),
    ("pypi", "registry", "tune", "pypi-AgEIcHlwaS5vcmc{u:70-110}", "pypi.org/help API tokens (macaroon, pypi- prefix)"),
    ("testpypi", "registry", "held", "pypi-AgENdGVzdC5weXBpLm9yZw{u:70-110}", "test.pypi.org API tokens"),
    ("rubygems", "registry", "tune", "rubygems_{h:48}", "guides.rubygems.org API key scopes (rubygems_ prefix)"),
    ("nuget", "registry", "held", "oy2{a:43}", "NuGet API keys (oy2 prefix); gitleaks nuget? / GitHub secret scanning 'NuGet API Key'"),
    ("docker-pat", "registry", "tune", "dckr_pat_{u:27}", "docs.docker.com security/access-tokens (dckr_pat_)"),
    ("docker-oat", "registry", "held", "dckr_oat_{u:32}", "docs.docker.com organization access tokens (dckr_oat_)"),
    ("clojars", "registry", "tune", "CLOJARS_{a:60}", "Clojars deploy tokens; gitleaks clojars-api-token"),
    ("packagist", "registry", "held", "packagist_uut_{h:68}", "Private Packagist tokens (packagist_uut_, packagist_ort_)"),
    ("artifactory-api", "registry", "tune", "AKCp{A:69}", "JFrog Artifactory API keys (AKCp); gitleaks artifactory-api-key"),
    ("artifactory-reference", "registry", "held", "cmVmdGtuOjAxOjE3{A:48}", "JFrog reference tokens (base64 of 'reftkn:01:'); gitleaks artifactory-reference-token"),
    ("pulumi", "registry", "tune", "pul-{h:40}", "Pulumi docs: access tokens (pul-); gitleaks pulumi-api-token"),
    ("terraform-cloud", "registry", "held", "{A:14}.atlasv1.{u:67}", "HashiCorp Terraform Cloud API tokens (.atlasv1.); gitleaks hashicorp-tf-api-token"),
    ("shopify-app", "registry", "tune", "shpat_{h:32}", "shopify.dev access tokens (shpat_, shpca_, shppa_, shpss_)"),
    ("shopify-secret", "registry", "held", "shpss_{h:32}", "shopify.dev app shared secrets (shpss_)"),
    # ---- AI providers
    ("huggingface", "ai", "tune", "hf_{L:34}", "huggingface.co/docs/hub/security-tokens (hf_ prefix)"),
    ("huggingface-org", "ai", "held", "api_org_{L:34}", "Hugging Face org API tokens (api_org_); gitleaks huggingface-organization-api-token"),
    ("openai-project", "ai", "tune", "sk-proj-{u:64}T3BlbkFJ{u:64}", "OpenAI API keys (sk-proj-, T3BlbkFJ marker); gitleaks openai-api-key"),
    ("openai-service-account", "ai", "held", "sk-svcacct-{u:64}T3BlbkFJ{u:64}", "OpenAI service account keys (sk-svcacct-)"),
    ("openai-admin", "ai", "tune", "sk-admin-{u:64}T3BlbkFJ{u:64}", "OpenAI admin keys (sk-admin-)"),
    ("openai-legacy", "ai", "held", "sk-{A:20}T3BlbkFJ{A:20}", "OpenAI legacy user keys; gitleaks openai-api-key"),
    ("anthropic", "ai", "tune", "sk-ant-api03-{u:93}AA", "Anthropic API keys (sk-ant-api03-); gitleaks anthropic-api-key"),
    ("anthropic-admin", "ai", "held", "sk-ant-admin01-{u:93}AA", "Anthropic admin keys (sk-ant-admin01-)"),
    ("openrouter", "ai", "tune", "sk-or-v1-{h:64}", "OpenRouter API keys (sk-or-v1-)"),
    ("groq", "ai", "held", "gsk_{A:52}", "Groq API keys (gsk_); trufflehog groq detector"),
    ("replicate", "ai", "tune", "r8_{A:37}", "Replicate API tokens (r8_)"),
    ("perplexity", "ai", "held", "pplx-{A:48}", "Perplexity API keys (pplx-)"),
    ("xai", "ai", "tune", "xai-{A:80}", "xAI API keys (xai-)"),
    ("nvidia-nim", "ai", "held", "nvapi-{u:64}", "NVIDIA API catalog / NGC keys (nvapi-)"),
    ("langsmith-pat", "ai", "tune", "lsv2_pt_{h:32}_{h:10}", "LangSmith API keys (lsv2_pt_, lsv2_sk_)"),
    ("langsmith-service", "ai", "held", "lsv2_sk_{h:32}_{h:10}", "LangSmith service keys (lsv2_sk_)"),
    ("pinecone", "ai", "tune", "pcsk_{A:5}_{A:63}", "Pinecone API keys (pcsk_)"),
    ("cerebras", "ai", "held", "csk-{a:48}", "Cerebras API keys (csk-)"),
    ("elevenlabs", "ai", "tune", "sk_{h:48}", "ElevenLabs API keys (sk_ + 48 hex)"),
    ("deepseek", "ai", "held", "sk-{h:32}", "DeepSeek API keys (sk- + 32 hex)"),
    ("langfuse-secret", "ai", "tune", "sk-lf-{h:8}-{h:4}-{h:4}-{h:4}-{h:12}", "Langfuse secret keys (sk-lf-)"),
    ("modal-secret", "ai", "held", "as-{A:22}", "Modal token secrets (as-); Modal docs tokens"),
    ("anyscale", "ai", "tune", "esecret_{a:40}", "Anyscale API keys (esecret_)"),
    ("fireworks", "ai", "held", "fw_{A:24}", "Fireworks AI API keys (fw_)"),
    ("together", "ai", "tune", "tgp_v1_{u:43}", "Together AI API keys (tgp_v1_)"),
    ("voyage", "ai", "held", "pa-{u:43}", "Voyage AI API keys (pa-)"),
    ("google-api", "ai", "tune", "AIza{u:35}", "Google Cloud API keys (AIza); gitleaks gcp-api-key"),
    ("stability", "ai", "held", "sk-{A:48}", "Stability AI API keys (sk- + 48 base62)"),
    # ---- cloud
    ("aws-access-key", "cloud", "tune", "AKIA{2:16}", "AWS IAM user guide: unique identifier prefixes (AKIA)"),
    ("aws-temp-access-key", "cloud", "held", "ASIA{2:16}", "AWS IAM user guide: unique identifier prefixes (ASIA)"),
    ("aws-session-token", "cloud", "tune", "IQoJb3JpZ2luX2Vj{b:300-600}", "AWS STS session tokens (base64 of '!\\n\\torigin_ec...'); trufflehog aws session tokens"),
    ("aws-session-token-legacy", "cloud", "held", "FwoGZXIvYXdzE{b:200-400}", "AWS STS legacy session tokens (FwoGZXIvYXdzE)"),
    ("gcp-oauth-client-secret", "cloud", "tune", "GOCSPX-{u:28}", "Google OAuth client secrets (GOCSPX-); GitHub secret scanning 'Google OAuth Client Secret'"),
    ("gcp-refresh-token", "cloud", "held", "1//0{u:100}", "Google OAuth refresh tokens (1//); GitHub secret scanning 'Google OAuth Refresh Token'"),
    ("gcp-access-token", "cloud", "tune", "ya29.a0{u:150}", "Google OAuth access tokens (ya29.); GitHub secret scanning"),
    ("azure-ad-client-secret", "cloud", "held", "{u:3}8Q~{u:34}", "Microsoft Entra client secrets (xxx8Q~...); gitleaks azure-ad-client-secret"),
    ("azure-storage-key", "cloud", "tune", "{b:86}==", "Azure storage account keys (512-bit base64, 88 chars)"),
    ("azure-devops-pat", "cloud", "held", "{A:52}AZDO{A:4}", "Azure DevOps PAT (84 chars, AZDO signature at 76); learn.microsoft.com"),
    ("alibaba-access-key", "cloud", "tune", "LTAI{A:20}", "Alibaba Cloud AccessKey IDs (LTAI); gitleaks alibaba-access-key-id"),
    ("tencent-secret-id", "cloud", "held", "AKID{A:32}", "Tencent Cloud SecretId (AKID); trufflehog tencent"),
    ("digitalocean-pat", "cloud", "tune", "dop_v1_{h:64}", "DigitalOcean docs: token prefixes (dop_v1_, doo_v1_, dor_v1_)"),
    ("digitalocean-oauth", "cloud", "held", "doo_v1_{h:64}", "DigitalOcean docs: token prefixes"),
    ("digitalocean-refresh", "cloud", "tune", "dor_v1_{h:64}", "DigitalOcean docs: token prefixes"),
    ("flyio", "cloud", "held", "fo1_{u:43}", "Fly.io tokens (fo1_); gitleaks flyio-access-token"),
    ("flyio-macaroon", "cloud", "tune", "FlyV1 fm2_{b:200}", "Fly.io macaroon tokens (FlyV1 fm2_)"),
    ("heroku-v2", "cloud", "held", "HRKU-AA{u:58}", "Heroku API keys new format (HRKU-AA); devcenter.heroku.com"),
    ("netlify", "cloud", "tune", "nfp_{A:36}", "Netlify personal access tokens (nfp_)"),
    ("vercel", "cloud", "held", "vcp_{A:56}", "Vercel access tokens (vcp_, vci_, vca_, vcr_, vck_)"),
    ("render", "cloud", "tune", "rnd_{A:32}", "Render API keys (rnd_)"),
    ("supabase-pat", "cloud", "held", "sbp_{h:40}", "Supabase personal access tokens (sbp_)"),
    ("supabase-secret", "cloud", "tune", "sb_secret_{u:31}", "Supabase secret API keys (sb_secret_)"),
    ("planetscale-token", "cloud", "held", "pscale_tkn_{u:43}", "PlanetScale service tokens (pscale_tkn_)"),
    ("planetscale-password", "cloud", "tune", "pscale_pw_{u:43}", "PlanetScale passwords (pscale_pw_)"),
    ("neon", "cloud", "held", "napi_{a:64}", "Neon API keys (napi_)"),
    ("databricks", "cloud", "tune", "dapi{h:32}", "Databricks PATs (dapi); gitleaks databricks-api-token"),
    ("doppler", "cloud", "held", "dp.pt.{A:43}", "Doppler token formats (dp.pt., dp.st., dp.sa., dp.ct.)"),
    ("doppler-service", "cloud", "tune", "dp.st.{a:8}.{A:43}", "Doppler service tokens (dp.st.)"),
    ("vault-service", "cloud", "held", "hvs.{u:90}", "HashiCorp Vault token prefixes (hvs., hvb., hvr.)"),
    ("vault-batch", "cloud", "tune", "hvb.{u:138}", "HashiCorp Vault batch tokens (hvb.)"),
    ("cloudflare-origin-ca", "cloud", "held", "v1.0-{h:24}-{h:146}", "Cloudflare Origin CA keys; gitleaks cloudflare-origin-ca-key"),
    ("scaleway-access-key", "cloud", "tune", "SCW{U:17}", "Scaleway access keys (SCW)"),
    ("yandex-api-key", "cloud", "held", "AQVN{u:36}", "Yandex Cloud API keys (AQVN); gitleaks yandex-api-key"),
    ("yandex-oauth", "cloud", "tune", "y0_{u:55}", "Yandex OAuth tokens (y0_)"),
    ("ibm-cos-hmac", "cloud", "held", "{h:48}", "(no-prefix) stands only under secret names"),
    ("openshift", "cloud", "tune", "sha256~{u:43}", "OpenShift user tokens (sha256~); gitleaks openshift-user-token"),
    # ---- VPN and network auth
    ("tailscale-auth", "vpn", "held", "tskey-auth-{A:12}CNTRL-{A:33}", "Tailscale docs: auth keys (tskey-auth-)"),
    ("tailscale-api", "vpn", "tune", "tskey-api-{A:12}CNTRL-{A:33}", "Tailscale docs: API access tokens (tskey-api-)"),
    ("tailscale-client", "vpn", "held", "tskey-client-{A:12}CNTRL-{A:33}", "Tailscale docs: OAuth clients (tskey-client-)"),
    ("ngrok-authtoken", "vpn", "tune", "2{A:26}_{A:21}", "ngrok authtokens; trufflehog ngrok"),
    ("defined-networking", "vpn", "held", "dnkey-{a:26}-{a:52}", "Defined Networking API tokens (dnkey-)"),
    ("netbird-pat", "vpn", "tune", "nbp_{A:30}{A:6}", "NetBird personal access tokens (nbp_)"),
    ("age-identity", "vpn", "held", "AGE-SECRET-KEY-1{C:58}", "age spec: identities (AGE-SECRET-KEY-1, bech32)"),
    ("wireguard-private", "vpn", "tune", "{b:42}{l:1}=", "WireGuard private keys (32 bytes, base64)"),
    # ---- payments and commerce
    ("stripe-secret", "payments", "held", "sk_live_{A:99}", "docs.stripe.com/keys (sk_live_)"),
    ("stripe-restricted", "payments", "tune", "rk_live_{A:99}", "docs.stripe.com/keys (rk_live_)"),
    ("stripe-test", "payments", "held", "sk_test_{A:24}", "docs.stripe.com/keys (sk_test_)"),
    ("stripe-webhook", "payments", "tune", "whsec_{A:32}", "docs.stripe.com/webhooks signing secrets (whsec_)"),
    ("svix-webhook", "payments", "held", "whsec_{b:32}", "Svix / Clerk webhook signing secrets (whsec_ + base64)"),
    ("square-access", "payments", "tune", "EAAA{u:60}", "Square access tokens (EAAA); gitleaks square-access-token"),
    ("square-secret", "payments", "held", "sq0csp-{u:43}", "Square application secrets (sq0csp-)"),
    ("braintree", "payments", "tune", "access_token$production${a:16}${h:32}", "Braintree/PayPal access tokens; gitleaks"),
    ("plaid-access", "payments", "held", "access-production-{h:8}-{h:4}-{h:4}-{h:4}-{h:12}", "Plaid access tokens (access-production-)"),
    ("shippo", "payments", "tune", "shippo_live_{h:40}", "Shippo API tokens (shippo_live_)"),
    ("easypost", "payments", "held", "EZAK{A:54}", "EasyPost API keys (EZAK, EZTK)"),
    ("flutterwave", "payments", "tune", "FLWSECK-{h:32}-X", "Flutterwave secret keys (FLWSECK-)"),
    ("duffel", "payments", "held", "duffel_live_{u:43}", "Duffel API tokens (duffel_live_)"),
    ("gocardless", "payments", "tune", "live_{u:40}", "GoCardless access tokens (live_)"),
    # ---- messaging and workspace integrations
    ("slack-bot", "workspace", "tune", "xoxb-{d:12}-{d:13}-{A:24}", "api.slack.com token types (xoxb-)"),
    ("slack-user", "workspace", "held", "xoxp-{d:12}-{d:12}-{d:13}-{h:32}", "api.slack.com token types (xoxp-)"),
    ("slack-app", "workspace", "tune", "xapp-1-A{U:10}-{d:13}-{h:64}", "api.slack.com app-level tokens (xapp-)"),
    ("slack-config-refresh", "workspace", "held", "xoxe-1-{A:146}", "api.slack.com configuration refresh tokens (xoxe-1-)"),
    ("slack-config-access", "workspace", "tune", "xoxe.xoxp-1-{A:160}", "api.slack.com configuration access tokens (xoxe.xoxp-1-)"),
    ("slack-webhook", "workspace", "held", "https://hooks.slack.com/services/T{U:10}/B{U:10}/{A:24}", "api.slack.com incoming webhooks"),
    ("discord-bot", "workspace", "tune", "M{A:25}.{u:6}.{u:38}", "Discord bot tokens; gitleaks discord"),
    ("discord-webhook", "workspace", "held", "https://discord.com/api/webhooks/{d:19}/{u:68}", "Discord webhooks"),
    ("telegram-bot", "workspace", "tune", "{d:10}:AA{u:33}", "core.telegram.org/bots/api (token format)"),
    ("teams-webhook", "workspace", "held", "https://acme.webhook.office.com/webhookb2/{h:8}-{h:4}-{h:4}-{h:4}-{h:12}@{h:8}-{h:4}-{h:4}-{h:4}-{h:12}/IncomingWebhook/{h:32}/{h:8}-{h:4}-{h:4}-{h:4}-{h:12}/V2{u:44}", "Microsoft Teams incoming webhooks"),
    ("notion-legacy", "workspace", "tune", "secret_{A:43}", "Notion integration secrets (secret_, legacy)"),
    ("notion", "workspace", "held", "ntn_{d:11}{A:35}", "Notion integration tokens (ntn_)"),
    ("linear", "workspace", "tune", "lin_api_{A:40}", "Linear API keys (lin_api_)"),
    ("linear-oauth", "workspace", "held", "lin_oauth_{h:64}", "Linear OAuth tokens (lin_oauth_)"),
    ("figma", "workspace", "tune", "figd_{u:40}", "Figma personal access tokens (figd_)"),
    ("airtable-pat", "workspace", "held", "pat{A:14}.{h:64}", "Airtable personal access tokens"),
    ("asana", "workspace", "tune", "2/{d:16}/{d:16}:{h:32}", "Asana personal access tokens (2/...)"),
    ("postman", "workspace", "held", "PMAK-{h:24}-{h:34}", "Postman API keys (PMAK-)"),
    ("typeform", "workspace", "tune", "tfp_{u:44}_{u:14}", "Typeform personal tokens (tfp_)"),
    ("contentful", "workspace", "held", "CFPAT-{u:43}", "Contentful personal access tokens (CFPAT-)"),
    ("dropbox-short", "workspace", "tune", "sl.B{u:134}", "Dropbox short-lived tokens (sl.)"),
    ("dropbox-refresh", "workspace", "held", "sl.u.{u:200}", "Dropbox tokens (sl.u.)"),
    ("frameio", "workspace", "tune", "fio-u-{u:64}", "Frame.io tokens (fio-u-)"),
    ("sendgrid", "workspace", "held", "SG.{u:22}.{u:43}", "SendGrid API keys (SG.)"),
    ("mailgun", "workspace", "tune", "key-{h:32}", "Mailgun private API keys (key-)"),
    ("mailchimp", "workspace", "held", "{h:32}-us{d:2}", "Mailchimp API keys (…-usNN)"),
    ("twilio-api-key", "workspace", "tune", "SK{h:32}", "Twilio API key SIDs (SK)"),
    ("facebook-token", "workspace", "held", "EAAC{A:120}", "Meta access tokens (EAA...)"),
    ("twitter-bearer", "workspace", "tune", "AAAAAAAAAAAAAAAAAAAAA{A:22}%3D{A:50}", "X/Twitter app bearer tokens"),
    ("twitter-access-token", "workspace", "tune", "{d:19}-{A:40}", "X/Twitter OAuth 1.0a access tokens (USER_ID-RANDOM, developer.x.com authentication docs); gitleaks twitter-access-token"),
    ("kraken-private-key", "payments", "tune", "{b:86}==", "Kraken REST API private keys: 64 bytes, base64 (docs.kraken.com REST authentication); gitleaks kraken-access-token"),
    ("mapbox-secret", "workspace", "held", "sk.eyJ1Ijoi{u:60}.{u:22}", "Mapbox secret tokens (sk.eyJ)"),
    ("firebase-fcm", "workspace", "tune", "AAAA{u:7}:APA91b{u:134}", "Firebase Cloud Messaging server keys"),
    ("beamer", "workspace", "held", "b_{u:44}", "Beamer API keys (b_)"),
    ("maxmind", "workspace", "tune", "{A:6}_{A:29}_mmk", "MaxMind license keys (_mmk)"),
    ("intra42", "workspace", "held", "s-s4t2ud-{h:64}", "42 Intra API client secrets (s-s4t2ud-)"),
    ("posthog-personal", "workspace", "tune", "phx_{A:43}", "PostHog personal API keys (phx_)"),
    ("infracost", "workspace", "held", "ico-{A:32}", "Infracost API keys (ico-)"),
    ("settlemint", "workspace", "tune", "sm_pat_{a:16}", "SettleMint tokens (sm_pat_)"),
    # ---- observability
    ("sentry-org", "observability", "tune", "sntrys_eyJ{u:120}_{u:43}", "Sentry org auth tokens (sntrys_)"),
    ("sentry-user", "observability", "held", "sntryu_{h:64}", "Sentry user auth tokens (sntryu_)"),
    ("grafana-cloud", "observability", "tune", "glc_eyJ{u:100}", "Grafana Cloud API tokens (glc_)"),
    ("grafana-service-account", "observability", "held", "glsa_{A:32}_{h:8}", "Grafana service account tokens (glsa_)"),
    ("newrelic-user", "observability", "tune", "NRAK-{U:27}", "New Relic user keys (NRAK-)"),
    ("newrelic-insert", "observability", "held", "NRII-{u:32}", "New Relic insert keys (NRII-)"),
    ("newrelic-license", "observability", "tune", "{h:36}NRAL", "New Relic license keys (…NRAL)"),
    ("dynatrace", "observability", "held", "dt0c01.{U:24}.{A:64}", "Dynatrace tokens (dt0c01.)"),
    ("honeycomb-ingest", "observability", "tune", "hcaik_01{a:58}", "Honeycomb ingest keys (hcaik_)"),
    ("honeycomb-management", "observability", "held", "hcxmk_01{a:58}", "Honeycomb management keys (hcxmk_)"),
    ("onepassword-secret-key", "observability", "tune", "A3-{U:6}-{U:11}-{U:5}-{U:5}-{U:5}", "1Password secret keys (A3-)"),
    ("onepassword-service", "observability", "held", "ops_eyJ{b:260}", "1Password service account tokens (ops_)"),
    ("jwt", "observability", "tune", "{jwt}", "RFC 7519 (header.payload.signature, base64url of JSON)"),
    ("pem-private-key", "observability", "held", "{pem}", "RFC 7468 (PEM private key blocks)"),
]

#: Formats that nothing but a secret-looking name can tell from a hex id (a commit, a digest):
#: planted only under a secret name.
UNDER_SECRET_NAME_ONLY = frozenset({"ibm-cos-hmac"})


def _crc32_b62(data: str) -> str:
    n = zlib.crc32(data.encode())
    chars = string.digits + string.ascii_letters
    out = ""
    while n:
        n, r = divmod(n, 62)
        out = chars[r] + out
    return out.rjust(6, "0")


def _b64url(rng: random.Random, n: int) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(n)).decode().rstrip("=")


def generate(spec: str, rng: random.Random) -> str:
    """One fresh value of ``spec``."""
    return generate_masked(spec, rng)[0]


def generate_masked(spec: str, rng: random.Random) -> tuple[str, list[bool]]:
    """One fresh value of ``spec`` and, for each of its characters, whether it is random (the
    literal parts of a format, ``ghp_``, a JWT's fixed header, are public text)."""
    if spec in ("{jwt}", "{pem}"):
        value = _special(spec, rng)
        if spec == "{jwt}":
            head = value.split(".", 1)[0]  # the fixed header, and the payload's '{"sub": "'
            return value, [i > len(head) + 12 for i in range(len(value))]
        lines = value.split("\n")
        mask = []
        for line in lines:
            mask += [not line.startswith("-----")] * len(line) + [False]
        return value, mask[:len(value)]
    out = ""
    mask: list[bool] = []
    i = 0
    while i < len(spec):
        if spec[i] == "{":
            j = spec.index("}", i)
            field = spec[i + 1:j]
            if field == "crc32":
                random_part = out.split("_", 1)[1]
                piece = _crc32_b62(random_part)
            else:
                cls, _, size = field.partition(":")
                lo, _, hi = size.partition("-")
                n = rng.randint(int(lo), int(hi or lo))
                piece = "".join(rng.choice(ALPHABETS[cls]) for _ in range(n))
            out += piece
            mask += [True] * len(piece)
            i = j + 1
        else:
            out += spec[i]
            mask.append(False)
            i += 1
    return out, mask


def _special(spec: str, rng: random.Random) -> str:
    if spec == "{jwt}":
        head = _b64url(rng, 0) + base64.urlsafe_b64encode(
            json.dumps({"alg": "HS256", "typ": "JWT"}).encode()).decode().rstrip("=")
        body = base64.urlsafe_b64encode(json.dumps(
            {"sub": str(rng.randrange(10**9)), "iat": rng.randrange(10**9),
             "n": _b64url(rng, 9)}).encode()).decode().rstrip("=")
        return f"{head}.{body}.{_b64url(rng, 32)}"
    if spec == "{pem}":
        body = "\n".join(base64.b64encode(rng.randbytes(48)).decode() for _ in range(8))
        return f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----"
    raise ValueError(spec)
