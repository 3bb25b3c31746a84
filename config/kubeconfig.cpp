#include "config/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <stdexcept>

#include "config/config_error.h"
#include "config/files.h"
#include "config/pem.h"
#include "config/server_url.h"

namespace config {

namespace {

std::string inQuotes(const std::string& text) { return "\"" + text + "\""; }

// One kubeconfig, parsed, with the context for error messages.
class Kubeconfig {
 public:
  explicit Kubeconfig(std::filesystem::path path) : path_(std::move(path)), dir_(path_.parent_path()) {
    const std::string text = readFile(path_, "kubeconfig");
    try {
      root_ = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw ConfigError("kubeconfig " + path_.string() + ": malformed YAML at line " +
                        std::to_string(e.mark.line + 1) + ", column " + std::to_string(e.mark.column + 1) + ": " +
                        e.msg);
    }
    if (!root_.IsMap()) throw error("want a kubeconfig mapping (apiVersion: v1, kind: Config)");
  }

  UpstreamConfig upstream(const std::optional<Setting>& context_setting) const;

 private:
  ConfigError error(const std::string& detail) const {
    return ConfigError("kubeconfig " + path_.string() + ": " + detail);
  }

  // The `kind` entry (cluster, user, context) of the list `list` named `name`.
  YAML::Node findNamed(const char* list, const char* kind, const std::string& name) const {
    const YAML::Node entries = root_[list];
    if (!entries) return YAML::Node(YAML::NodeType::Undefined);
    if (!entries.IsNull() && !entries.IsSequence()) throw error(std::string(list) + ": want a list");
    if (entries.IsSequence()) {
      for (const YAML::Node& entry : entries) {
        if (entry.IsMap() && entry["name"] && entry["name"].IsScalar() && entry["name"].Scalar() == name) {
          const YAML::Node body = entry[kind];
          if (body && !body.IsNull() && !body.IsMap()) {
            throw error(std::string(kind) + " " + inQuotes(name) + ": want a mapping");
          }
          return body ? body : YAML::Node(YAML::NodeType::Map);
        }
      }
    }
    return YAML::Node(YAML::NodeType::Undefined);
  }

  std::optional<std::string> string(const YAML::Node& node, const char* key, const std::string& where) const {
    const YAML::Node value = node.IsMap() ? node[key] : YAML::Node();
    if (!value || value.IsNull()) return std::nullopt;
    if (!value.IsScalar()) throw error(where + ": " + key + ": want a string");
    if (value.Scalar().empty()) return std::nullopt;
    return value.Scalar();
  }

  bool boolean(const YAML::Node& node, const char* key, const std::string& where) const {
    const YAML::Node value = node.IsMap() ? node[key] : YAML::Node();
    if (!value || value.IsNull()) return false;
    bool out = false;
    if (!value.IsScalar() || !YAML::convert<bool>::decode(value, out)) {
      throw error(where + ": " + key + ": want true or false");
    }
    return out;
  }

  // PEM text from either `<file_key>` (a path) or `<file_key>-data` (base64).
  std::string pemFrom(const YAML::Node& node, const std::string& file_key, const std::string& where) const {
    const std::string data_key = file_key + "-data";
    const std::optional<std::string> file = string(node, file_key.c_str(), where);
    const std::optional<std::string> data = string(node, data_key.c_str(), where);
    if (file && data) throw error(where + ": " + file_key + " and " + data_key + " are both set; keep one");
    if (data) {
      try {
        return decodeBase64(*data);
      } catch (const std::invalid_argument& e) {
        throw error(where + ": " + data_key + ": " + e.what());
      }
    }
    if (file) return readFile(resolveAgainst(dir_, *file), "kubeconfig " + path_.string() + ": " + where + ": " + file_key);
    return "";
  }

  void check(void (*checker)(const std::string&), const std::string& pem, const std::string& where,
             const std::string& key) const {
    try {
      checker(pem);
    } catch (const std::invalid_argument& e) {
      throw error(where + ": " + key + ": " + e.what());
    }
  }

  void applyCluster(const std::string& name, UpstreamConfig& out) const;
  void applyUser(const std::string& name, UpstreamConfig& out) const;
  void rejectUnsupportedAuth(const YAML::Node& user, const std::string& where) const;

  std::filesystem::path path_;
  std::filesystem::path dir_;
  YAML::Node root_;
};

UpstreamConfig Kubeconfig::upstream(const std::optional<Setting>& context_setting) const {
  std::string context_name;
  if (context_setting) {
    context_name = context_setting->value;
  } else {
    const std::optional<std::string> current = string(root_, "current-context", "top level");
    if (!current) throw error("no current-context is set; pass --context");
    context_name = *current;
  }
  const YAML::Node context = findNamed("contexts", "context", context_name);
  if (!context) {
    const std::string who = context_setting ? context_setting->origin : "current-context";
    throw ConfigError(who + " " + inQuotes(context_name) + ": no such context in " + path_.string());
  }
  const std::string where = "context " + inQuotes(context_name);
  const std::optional<std::string> cluster = string(context, "cluster", where);
  if (!cluster) throw error(where + ": cluster is not set");

  UpstreamConfig out;
  out.source = UpstreamSource::Kubeconfig;
  out.origin = "kubeconfig " + path_.string() + ", context " + inQuotes(context_name);
  applyCluster(*cluster, out);
  if (const std::optional<std::string> user = string(context, "user", where)) applyUser(*user, out);
  return out;
}

void Kubeconfig::applyCluster(const std::string& name, UpstreamConfig& out) const {
  const YAML::Node cluster = findNamed("clusters", "cluster", name);
  const std::string where = "cluster " + inQuotes(name);
  if (!cluster) throw error(where + ": no such cluster");

  const std::optional<std::string> server = string(cluster, "server", where);
  if (!server) throw error(where + ": server is not set");
  try {
    ServerUrl url = parseServerUrl(*server);
    out.scheme = url.scheme;
    out.host = url.host;
    out.port = url.port;
    out.path_prefix = url.path_prefix;
  } catch (const std::invalid_argument& e) {
    throw error(where + ": server " + inQuotes(*server) + ": " + e.what());
  }
  if (const std::optional<std::string> proxy = string(cluster, "proxy-url", where)) {
    throw error(where + ": proxy-url is not supported (" + *proxy + "); reach the apiserver directly");
  }
  out.tls_server_name = string(cluster, "tls-server-name", where).value_or("");
  out.insecure_skip_tls_verify = boolean(cluster, "insecure-skip-tls-verify", where);
  out.ca_pem = pemFrom(cluster, "certificate-authority", where);
  if (!out.ca_pem.empty()) {
    check(checkCertificates, out.ca_pem, where, "certificate-authority");
    if (out.insecure_skip_tls_verify) {
      throw error(where + ": " + kInsecureWithCertificateAuthority);
    }
  }
}

void Kubeconfig::rejectUnsupportedAuth(const YAML::Node& user, const std::string& where) const {
  if (user["exec"] && user["exec"].IsMap()) {
    const std::string command = string(user["exec"], "command", where + ": exec").value_or("");
    throw error(where + ": exec credential plugin " + inQuotes(command) +
                " is not supported; use a token, tokenFile or client certificate");
  }
  if (user["auth-provider"] && user["auth-provider"].IsMap()) {
    const std::string provider = string(user["auth-provider"], "name", where + ": auth-provider").value_or("");
    throw error(where + ": auth-provider " + inQuotes(provider) +
                " is not supported; use a token, tokenFile or client certificate");
  }
  if (string(user, "username", where) || string(user, "password", where)) {
    throw error(where + ": basic authentication (username/password) is not supported; use a token or client certificate");
  }
  for (const char* key : {"as", "as-uid", "as-groups", "as-user-extra"}) {
    if (user[key] && !user[key].IsNull()) throw error(where + ": impersonation (" + key + ") is not supported");
  }
}

void Kubeconfig::applyUser(const std::string& name, UpstreamConfig& out) const {
  const YAML::Node user = findNamed("users", "user", name);
  const std::string where = "user " + inQuotes(name);
  if (!user) throw error(where + ": no such user");
  rejectUnsupportedAuth(user, where);

  out.client_cert_pem = pemFrom(user, "client-certificate", where);
  out.client_key_pem = pemFrom(user, "client-key", where);
  if (out.client_cert_pem.empty() != out.client_key_pem.empty()) {
    throw error(where + (out.client_cert_pem.empty() ? ": client-key is set without client-certificate"
                                                     : ": client-certificate is set without client-key"));
  }
  if (!out.client_cert_pem.empty()) {
    check(checkCertificates, out.client_cert_pem, where, "client-certificate");
    check(checkPrivateKey, out.client_key_pem, where, "client-key");
    try {
      checkKeyMatchesCertificate(out.client_cert_pem, out.client_key_pem);
    } catch (const std::invalid_argument& e) {
      throw error(where + ": client-key: " + e.what());
    }
  }

  out.bearer_token = string(user, "token", where).value_or("");
  if (const std::optional<std::string> token_file = string(user, "tokenFile", where)) {
    const std::filesystem::path resolved = resolveAgainst(dir_, *token_file);
    // Read once now so a typo fails at start-up; the proxy re-reads it later.
    readFile(resolved, "kubeconfig " + path_.string() + ": " + where + ": tokenFile");
    out.bearer_token_file = resolved.string();
  }
}

}  // namespace

UpstreamConfig readKubeconfig(const std::filesystem::path& path, const std::optional<Setting>& context) {
  try {
    return Kubeconfig(path).upstream(context);
  } catch (const YAML::Exception& e) {
    // A shape this reader did not anticipate; still one line, still naming the file.
    throw ConfigError("kubeconfig " + path.string() + ": " + e.msg);
  }
}

}  // namespace config
