#!/usr/bin/env bash
# Builds the Java test client (the fabric8 kubernetes-client informer of this folder) once per
# machine into ~/.cache/kube-cache-proxy/java/fabric8-<version>-<hash of the sources>/ (see
# ../java-common/build.sh). Prints that folder on stdout (the last line):
# FOLDER/fabric8-informer.jar runs with `java -jar` (its libraries sit in FOLDER/lib).
exec bash "$(dirname "$0")/../java-common/build.sh" java fabric8
