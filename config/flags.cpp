#include <CLI/CLI.hpp>

#include <algorithm>
#include <iterator>
#include <map>
#include <vector>

#include "config/config.h"
#include "config/settings.h"

namespace config {

namespace {

// CLI11 wants the spelling for each option; "v" is both -v and --v, the way
// kubectl accepts -v=8 and --v=8.
std::string cliNames(const std::string& name) { return name == "v" ? "-v,--v" : "--" + name; }

std::string flagOrigin(const std::string& name) { return "--" + name; }

std::string unexpectedArgument(const std::string& arg) {
  if (arg.size() > 1 && arg.front() == '-') {
    return "unknown flag: " + arg.substr(0, arg.find('=')) + " (see --help)";
  }
  return "unexpected argument \"" + arg + "\": kube-cache-proxy takes flags only (see --help)";
}

}  // namespace

Settings parseFlags(int argc, const char* const* argv) {
  CLI::App app{"kube-cache-proxy"};
  app.allow_extras();
  app.set_help_flag("-h,--help");
  bool version = false;
  app.add_flag("--version", version);

  // CLI11 fills these; a field counts as given when its option was seen.
  std::map<std::string, std::string> scalars;
  std::map<std::string, std::vector<std::string>> lists;
  std::map<std::string, CLI::Option*> options;
  for (const ScalarField& field : kScalarFields) {
    const std::string name = field.name;
    CLI::Option* option = field.is_boolean ? app.add_flag(cliNames(name), scalars[name])
                                           : app.add_option(cliNames(name), scalars[name]);
    // pflag semantics: a repeated flag means its last value.
    option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    options[name] = option;
  }
  for (const ListField& field : kListFields) {
    options[field.name] = app.add_option(cliNames(field.name), lists[field.name])->delimiter(',');
  }
  std::string config_file;
  CLI::Option* config_option =
      app.add_option("--config", config_file)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  // "--refuse-client-cert-groups=" is how pflag users write an empty list, but CLI11 reads a list
  // option with an empty "=" value as one without a value and takes the following
  // arguments as its entries. Spelled as a separate empty argument it means [""].
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) {
    const std::string arg = argv[i];
    const bool empty_list = std::any_of(std::begin(kListFields), std::end(kListFields), [&](const ListField& field) {
      return arg == "--" + std::string(field.name) + "=";
    });
    if (empty_list) {
      args.emplace_back("");
      args.push_back(arg.substr(0, arg.size() - 1));
    } else {
      args.push_back(arg);
    }
  }

  try {
    // Reversed, as CLI11's vector overload wants them.
    app.parse(std::move(args));
  } catch (const CLI::CallForHelp&) {
    throw ExitRequest{0, helpText()};
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 words it "--listen: 1 required TEXT missing"; say it plainly.
    const std::string message = e.what();
    throw ConfigError(message.substr(0, message.find(':')) + ": needs a value (see --help)");
  } catch (const CLI::ParseError& e) {
    throw ConfigError(std::string(e.what()) + " (see --help)");
  }
  if (version) throw ExitRequest{0, versionText()};
  if (!app.remaining().empty()) throw ConfigError(unexpectedArgument(app.remaining().front()));

  Settings out;
  for (const ScalarField& field : kScalarFields) {
    if (options[field.name]->count() == 0) continue;
    std::string value = scalars[field.name];
    // CLI11 hands "-v=3" over as "=3"; kubectl users type it that way.
    if (std::string(field.name) == "v" && !value.empty() && value.front() == '=') value.erase(0, 1);
    out.*field.member = Setting{std::move(value), flagOrigin(field.name)};
  }
  for (const ListField& field : kListFields) {
    if (options[field.name]->count() == 0) continue;
    out.*field.member = ListSetting{lists[field.name], flagOrigin(field.name)};
  }
  if (config_option->count() > 0) out.config_file = Setting{config_file, "--config"};
  return out;
}

Settings overlay(const Settings& flags, const Settings& file) {
  Settings out = file;
  for (const ScalarField& field : kScalarFields) {
    if (flags.*field.member) out.*field.member = flags.*field.member;
  }
  for (const ListField& field : kListFields) {
    if (flags.*field.member) out.*field.member = flags.*field.member;
  }
  // Choosing a kubeconfig on the command line is choosing the upstream: it
  // beats an `upstream` from the file, which would otherwise win by the
  // resolution order and silently ignore the flag.
  if (!flags.upstream && (flags.kubeconfig || flags.context)) out.upstream.reset();
  out.config_file = flags.config_file;
  return out;
}

}  // namespace config
