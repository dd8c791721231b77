# bench/redis.gp - the plot of redis.sh's results (gnuplot -e "dir='bench/results'").
set datafile separator ','
set terminal pngcairo size 1100,450 font 'sans,10'
set output dir.'/redis.png'
set multiplot layout 1,2 title 'bench/redis.sh: Redis, 90% GET / 10% SET, 64-byte values (medians)'
set logscale x 2
set xlabel 'client threads'
set grid ytics
set key top left noenhanced
set yrange [0:*]
names = system("awk -F, 'NR > 1 && !seen[$1]++ { printf \"%s \", $1 }' ".dir."/redis.csv")
set ylabel 'requests/s'
set xrange [1.6:40]
# one variant's rows at a time, so each is one connected line
rows(v) = '< grep "^'.v.'," '.dir.'/redis.csv'
plot for [v in names] rows(v) using 2:4 with linespoints lw 2 pt 7 title v
set ylabel 'p99 latency, us'
plot for [v in names] rows(v) using 2:7 with linespoints lw 2 pt 7 title v
unset multiplot
