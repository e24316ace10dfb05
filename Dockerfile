FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY arena arena
COPY strategies strategies
COPY traders traders
COPY debates debates
COPY evaluations evaluations
COPY backtests backtests
COPY ops ops
COPY web web
COPY templates templates
COPY manage.py ./
RUN pip install --no-cache-dir .
RUN DJANGO_SETTINGS_MODULE=arena.settings.local python manage.py collectstatic --noinput
EXPOSE 8000
