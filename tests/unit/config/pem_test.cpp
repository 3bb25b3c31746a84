#include "config/pem.h"

#include <doctest/doctest.h>

#include <stdexcept>

#include "test_support.h"

using config::test::testPki;

TEST_CASE("Base64 decodes standard text with or without line breaks") {
  CHECK(config::decodeBase64("aGVsbG8=") == "hello");
  CHECK(config::decodeBase64("aGVs\nbG8h") == "hello!");
  CHECK(config::decodeBase64("") == "");
  const std::string pem = testPki().ca_cert;
  CHECK(config::decodeBase64(config::test::encodeBase64(pem)) == pem);
}

TEST_CASE("Invalid base64 is rejected") {
  CHECK_THROWS_WITH_AS(config::decodeBase64("not base64!"), "invalid base64", std::invalid_argument);
  CHECK_THROWS_AS(config::decodeBase64("aGVsbG8"), std::invalid_argument);
  CHECK_THROWS_AS(config::decodeBase64("aG=sbG8="), std::invalid_argument);
}

TEST_CASE("Certificates and keys are recognised and told apart") {
  CHECK_NOTHROW(config::checkCertificates(testPki().ca_cert));
  CHECK_NOTHROW(config::checkCertificates(testPki().ca_cert + testPki().client_cert));
  CHECK_NOTHROW(config::checkPrivateKey(testPki().client_key));
  CHECK_THROWS_WITH_AS(config::checkCertificates(testPki().client_key), "no PEM certificate found",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(config::checkPrivateKey(testPki().client_cert), "no PEM private key found",
                       std::invalid_argument);
  CHECK_THROWS_AS(config::checkCertificates("hello"), std::invalid_argument);
}

TEST_CASE("A client key must belong to the client certificate") {
  CHECK_NOTHROW(config::checkKeyMatchesCertificate(testPki().client_cert, testPki().client_key));
  CHECK_THROWS_WITH_AS(config::checkKeyMatchesCertificate(testPki().client_cert, testPki().other_key),
                       "private key does not match the client certificate", std::invalid_argument);
}
