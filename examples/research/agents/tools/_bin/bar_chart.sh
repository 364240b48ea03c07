#!/bin/sh
# Reads {"title":..., "values":[{"label":..,"value":..}, ...]} on stdin and prints a ToolResult whose
# attachment is an SVG bar chart (one bar per value).
set -eu
input=$(cat)
title=$(printf '%s' "$input" | sed -n 's/.*"title" *: *"\([^"]*\)".*/\1/p')
bars=$(printf '%s' "$input" | tr '{' '\n' | sed -n 's/.*"label" *: *"\([^"]*\)".*"value" *: *\([0-9.]*\).*/\1 \2/p')
svg="<svg xmlns='http://www.w3.org/2000/svg' width='400' height='220'><text x='10' y='20'>$title</text>"
i=0
printf '%s\n' "$bars" | { while read -r label value; do
  [ -n "$label" ] || continue
  h=$(printf '%.0f' "$value")
  x=$((10 + i * 60)); y=$((200 - h))
  svg="$svg<rect x='$x' y='$y' width='40' height='$h'/><text x='$x' y='215'>$label</text>"
  i=$((i + 1))
done
svg="$svg</svg>"
data=$(printf '%s' "$svg" | base64 | tr -d '\n')
printf '{"status":"success","result":"Chart of %s with %d bars","attachments":[{"name":"chart.svg","mimeType":"image/svg+xml","data":"%s"}]}\n' "$title" "$i" "$data"
}
