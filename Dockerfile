# `rnnc serve` on Debian 12 (docs/serving.md, "Deployment"). From the repository root:
#   docker build -t rnnc-serve .
#   docker run -p 8000:8000 -p 8001:8001 rnnc-serve
# The build uses the README's commands (tests/serve/deployment_test.py checks they agree). The
# image keeps g++: a model whose kernels are not in the warmed cache is compiled at load, which
# links with the C compiler.
FROM debian:12

WORKDIR /opt/rnnc
COPY . .
RUN scripts/setup.sh
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
RUN cmake --build build --target rnnc

# Kernels for a named portable level, compiled into the image's cache at build time: a replica on
# any CPU of that level (AVX2 + FMA) starts from a warm cache and is ready within about a second.
ENV RNNC_CACHE_DIR=/var/cache/rnnc
RUN build/tools/rnnc serve --warm-only --target x86-64-v3 \
    --model demo=models/demo/lstm_demo.onnx,dim=seq=16,dim=batch=1

EXPOSE 8000 8001
ENTRYPOINT ["build/tools/rnnc", "serve", "--host", "0.0.0.0", "--http-port", "8000", \
            "--grpc-port", "8001", "--target", "x86-64-v3"]
CMD ["--model", "demo=models/demo/lstm_demo.onnx,dim=seq=16,dim=batch=1"]
