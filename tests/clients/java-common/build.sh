#!/usr/bin/env bash
# Builds one of the Java test clients, the Maven project of tests/clients/FOLDER, once per
# machine with Debian's JDK 17 and Maven, artifacts from Maven Central. The Maven repository
# (shared by the clients) and the builds live under ~/.cache/kube-cache-proxy/java, each build in
# a folder named by NAME, the version of the property NAME.version of its pom.xml and a hash of
# its sources (this folder's line protocol included), so a second run costs a second. Prints
# that folder on stdout (the last line); the jar in it runs with `java -jar` (its libraries sit
# in FOLDER/lib).
#
#   bash tests/clients/java-common/build.sh FOLDER NAME
#   KCP_JAVA_CACHE=DIR   the cache root (default ~/.cache/kube-cache-proxy/java)
set -euo pipefail
[ $# = 2 ] || { echo "usage: $0 FOLDER NAME" >&2; exit 2; }
cd "$(dirname "$0")/../$1"
name=$2

command -v mvn >/dev/null && command -v javac >/dev/null ||
  { echo "java-build: no mvn/javac (scripts/install-deps.sh installs openjdk-17-jdk-headless and maven)" >&2; exit 1; }
cache=${KCP_JAVA_CACHE:-$HOME/.cache/kube-cache-proxy/java}
version=$(sed -n "s:.*<$name.version>\(.*\)</$name.version>.*:\1:p" pom.xml)
hash=$( (cat pom.xml; find src ../java-common/src -type f | sort | xargs cat) | sha256sum | cut -c1-12)
out="$cache/$name-$version-$hash"
if [ -f "$out/.built" ]; then
  echo "$out"
  exit 0
fi

SECONDS=0
echo "building the $name $version test client into $out (first build on this machine: a minute or two)" >&2
rm -rf "$out"
mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$cache/m2" -Dkcp.build.dir="$out" -DskipTests package >&2
touch "$out/.built"
echo "$name test client built in $SECONDS s" >&2
echo "$out"
