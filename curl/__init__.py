"""The image's ``curl`` (console script ``nrop-curl``): the subset of curl 7.76.1 that the serial
suite runs inside pods (``curl -k https://127.0.0.1:2112/metrics``,
``sh -c "curl --connect-timeout 5 http://<host>:<port>"``), with curl's output, messages and
exit codes.

The images the suite execs into ship curl 7.76.1 (ubi9-minimal, CentOS Stream 9); the project's
image, and the embedded cluster's emulation of upstream's images, provide this one instead
(``localcluster/kubelet/knownimages.py``). ``arguments`` parses the command line and the URL,
``failures`` names the exit codes and messages, ``destinations`` decides where a loopback URL
connects in the embedded cluster's containers, ``transfer`` does the network part and ``main``
is the entry point.
"""

__all__ = ["destinations", "main"]
