#!/usr/bin/env bash
# Builds the client-java test client (the SharedInformerFactory informer of this folder) once per
# machine into ~/.cache/kube-cache-proxy/java/client-java-<version>-<hash of the sources>/,
# sharing the Maven repository with the fabric8 client (see ../java-common/build.sh). Prints that
# folder on stdout (the last line): FOLDER/client-java-informer.jar runs with `java -jar` (its
# libraries sit in FOLDER/lib).
exec bash "$(dirname "$0")/../java-common/build.sh" client-java client-java
