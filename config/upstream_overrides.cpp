#include "config/upstream_overrides.h"

#include <optional>
#include <stdexcept>

#include "config/files.h"
#include "config/pem.h"
#include "config/values.h"

namespace config {

namespace {

const std::string& nonEmpty(const Setting& setting) {
  if (setting.value.empty()) throw ConfigError(setting.origin + ": must not be empty");
  return setting.value;
}

// The file's text after `checker` accepted it; errors name the setting.
std::string readPem(const Setting& setting, void (*checker)(const std::string&)) {
  std::string pem = readFile(nonEmpty(setting), setting.origin);
  try {
    checker(pem);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(setting.origin + " " + setting.value + ": " + e.what());
  }
  return pem;
}

// clientcmd semantics: a CA flag also replaces the kubeconfig's
// insecure-skip-tls-verify (with the flag's value, false if absent), and
// --insecure-skip-tls-verify=true alone drops the kubeconfig's CA, so that
// either flag works against any kubeconfig instead of tripping the
// "both set" check.
void applyServerTrust(const Settings& settings, UpstreamConfig& upstream) {
  const bool insecure = settings.insecure_skip_tls_verify && parseBool(*settings.insecure_skip_tls_verify);
  if (settings.certificate_authority) {
    if (insecure) {
      throw ConfigError(settings.insecure_skip_tls_verify->origin + ": " + kInsecureWithCertificateAuthority + " (" +
                        settings.certificate_authority->origin + ")");
    }
    upstream.ca_pem = readPem(*settings.certificate_authority, checkCertificates);
    upstream.insecure_skip_tls_verify = false;
  } else if (settings.insecure_skip_tls_verify) {
    upstream.insecure_skip_tls_verify = insecure;
    if (insecure) upstream.ca_pem.clear();
  }
  if (settings.tls_server_name) upstream.tls_server_name = nonEmpty(*settings.tls_server_name);
}

// Both or neither, as in a kubeconfig user: half a key pair is a typo.
void applyClientCertificate(const Settings& settings, UpstreamConfig& upstream) {
  if (!settings.client_certificate && !settings.client_key) return;
  if (!settings.client_key) {
    throw ConfigError(settings.client_certificate->origin + " is set without --client-key");
  }
  if (!settings.client_certificate) {
    throw ConfigError(settings.client_key->origin + " is set without --client-certificate");
  }
  std::string cert = readPem(*settings.client_certificate, checkCertificates);
  std::string key = readPem(*settings.client_key, checkPrivateKey);
  try {
    checkKeyMatchesCertificate(cert, key);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(settings.client_key->origin + " " + settings.client_key->value + ": " + e.what());
  }
  upstream.client_cert_pem = std::move(cert);
  upstream.client_key_pem = std::move(key);
}

// A token flag replaces the token *and* any kubeconfig tokenFile; otherwise
// the file, which wins over a static token, would silently ignore the flag.
void applyBearerToken(const Settings& settings, UpstreamConfig& upstream) {
  if (settings.token && settings.token_file) {
    throw ConfigError(settings.token->origin + " and " + settings.token_file->origin + " are both set; keep one");
  }
  if (settings.token) {
    upstream.bearer_token = nonEmpty(*settings.token);
    upstream.bearer_token_file.clear();
  } else if (settings.token_file) {
    if (readFile(nonEmpty(*settings.token_file), settings.token_file->origin).empty()) {
      throw ConfigError(settings.token_file->origin + ": " + settings.token_file->value + " is empty");
    }
    upstream.bearer_token.clear();
    upstream.bearer_token_file = settings.token_file->value;
  }
}

// kubectl says nothing here; a silent no-op would hide a wrong URL scheme.
void warnAboutTlsOverHttp(const Settings& settings, const UpstreamConfig& upstream,
                          std::vector<std::string>& warnings) {
  if (upstream.scheme != "http") return;
  for (const std::optional<Setting>* tls : {&settings.certificate_authority, &settings.client_certificate,
                                            &settings.tls_server_name, &settings.insecure_skip_tls_verify}) {
    if (*tls) warnings.push_back((*tls)->origin + " has no effect: the upstream " + upstream.host + " is plain http");
  }
}

}  // namespace

void applyUpstreamOverrides(const Settings& settings, UpstreamConfig& upstream, std::vector<std::string>& warnings) {
  warnAboutTlsOverHttp(settings, upstream, warnings);
  applyServerTrust(settings, upstream);
  applyClientCertificate(settings, upstream);
  applyBearerToken(settings, upstream);
  if (settings.connect_timeout) {
    upstream.connect_timeout = parseTimeout(*settings.connect_timeout);
    // Zero would read as "no timeout" to some clients and "fail at once" to others.
    if (upstream.connect_timeout.count() == 0) {
      throw ConfigError(settings.connect_timeout->origin + " \"" + settings.connect_timeout->value +
                        "\": must be positive");
    }
  }
}

}  // namespace config
