#pragma once
// Decoding and sanity checks for the TLS material in a kubeconfig, done at
// start-up so a bad certificate is reported with the key that holds it rather
// than as a handshake failure on the first request.

#include <string>
#include <string_view>

namespace config {

// Standard base64 as in kubeconfig `*-data` fields; line breaks are allowed.
// Throws std::invalid_argument.
std::string decodeBase64(std::string_view text);

// Each throws std::invalid_argument saying what is wrong with the PEM.
void checkCertificates(const std::string& pem);  // one or more certificates
void checkPrivateKey(const std::string& pem);
void checkKeyMatchesCertificate(const std::string& cert_pem, const std::string& key_pem);

// client-go refuses this pair: trusting a CA and trusting anything cannot both
// be meant. Shared so the kubeconfig and the flags say it the same way.
inline constexpr char kInsecureWithCertificateAuthority[] =
    "insecure-skip-tls-verify cannot be combined with a certificate authority";

}  // namespace config
